package ai.chalk.compute.sandbox;

/**
 * Output arrays the SDK makes for an event and hands to it. An output event copies the array it is given, since a
 * caller may write to it again; an array the SDK made for the event alone needs no copy, and fast output (a quarter
 * of a MiB per chunk) then costs one copy less on its way from the message to the reader.
 */
final class HandedOver {

    /** The array handed to the next output event this thread makes; each is taken once. */
    private static final ThreadLocal<byte[]> NEXT = new ThreadLocal<>();

    private HandedOver() {}

    /**
     * Marks an array that nothing else holds as the next output event's own.
     *
     * @return the array
     */
    static byte[] give(byte[] data) {
        NEXT.set(data);
        return data;
    }

    /** The array itself when it was just handed over on this thread, else a copy of it. */
    static byte[] keep(byte[] data) {
        if (NEXT.get() == data) {
            NEXT.set(null);
            return data;
        }
        return data.clone();
    }
}
