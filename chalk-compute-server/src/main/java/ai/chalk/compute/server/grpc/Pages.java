package ai.chalk.compute.server.grpc;

import io.grpc.Status;

/** Page sizes and cursors of List RPCs: the cursor is the sequence number of the last item sent, as text. */
public final class Pages {

    /** Items per page when the request gives no limit. */
    public static final int DEFAULT_LIMIT = 100;
    /** Most items one page may hold. */
    public static final int MAX_LIMIT = 1000;

    private Pages() {}

    /** The page size asked for, or INVALID_ARGUMENT saying the range. */
    public static int limit(boolean present, int limit) {
        if (!present) {
            return DEFAULT_LIMIT;
        }
        if (limit <= 0 || limit > MAX_LIMIT) {
            throw Status.INVALID_ARGUMENT
                    .withDescription("limit " + limit + " is out of range: give 1 to " + MAX_LIMIT + ", or omit it for "
                            + DEFAULT_LIMIT)
                    .asRuntimeException();
        }
        return limit;
    }

    /** The sequence number a cursor stands for; 0 (the start) for none. */
    public static long cursor(boolean present, String cursor) {
        if (!present || cursor.isEmpty()) {
            return 0;
        }
        try {
            long seq = Long.parseLong(cursor);
            if (seq > 0) {
                return seq;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw Status.INVALID_ARGUMENT
                .withDescription("cursor \"" + cursor
                        + "\" is not one this server returned: pass next_cursor from a previous response")
                .asRuntimeException();
    }
}
