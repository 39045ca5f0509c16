package ai.chalk.compute.sandbox;

import ai.chalk.compute.proto.sandbox.v1.ListSandboxesRequest;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * Which sandboxes to list, and which page. Immutable; each method returns new options.
 *
 * <pre>{@code
 * SandboxPage page = client.list(ListOptions.defaults().includeTerminated(true).limit(20));
 * }</pre>
 */
public final class ListOptions {

    private static final ListOptions DEFAULTS = new ListOptions(false, List.of(), List.of(), null, null);

    private final boolean includeTerminated;
    private final List<String> states;
    private final List<String> notStates;
    private final Integer limit;
    private final String cursor;

    private ListOptions(
            boolean includeTerminated, List<String> states, List<String> notStates, Integer limit, String cursor) {
        this.includeTerminated = includeTerminated;
        this.states = states;
        this.notStates = notStates;
        this.limit = limit;
        this.cursor = cursor;
    }

    /** Sandboxes that have not terminated, first page, the server's page size. */
    public static ListOptions defaults() {
        return DEFAULTS;
    }

    /**
     * Whether terminated sandboxes are listed too.
     *
     * @param include {@code true} to include them
     * @return new options
     */
    public ListOptions includeTerminated(boolean include) {
        return new ListOptions(include, states, notStates, limit, cursor);
    }

    /**
     * Only sandboxes in one of these states, for example {@code "RUNNING"}.
     *
     * @param states state names
     * @return new options
     */
    public ListOptions states(String... states) {
        return new ListOptions(includeTerminated, copy(states), notStates, limit, cursor);
    }

    /**
     * Only sandboxes in none of these states.
     *
     * @param states state names
     * @return new options
     */
    public ListOptions notStates(String... states) {
        return new ListOptions(includeTerminated, this.states, copy(states), limit, cursor);
    }

    /**
     * At most this many sandboxes on the page.
     *
     * @param limit a positive page size
     * @return new options
     */
    public ListOptions limit(int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be positive, got " + limit);
        }
        return new ListOptions(includeTerminated, states, notStates, limit, cursor);
    }

    /**
     * The page after the one that returned this cursor.
     *
     * @param cursor a {@link SandboxPage#nextCursor()}
     * @return new options
     */
    public ListOptions cursor(String cursor) {
        return new ListOptions(includeTerminated, states, notStates, limit, Objects.requireNonNull(cursor, "cursor"));
    }

    /** Whether terminated sandboxes are listed. */
    public boolean includeTerminated() {
        return includeTerminated;
    }

    /** The states listed; empty for all. */
    public List<String> states() {
        return states;
    }

    /** The states excluded. */
    public List<String> notStates() {
        return notStates;
    }

    /** The page size, if set. */
    public OptionalInt limit() {
        return limit == null ? OptionalInt.empty() : OptionalInt.of(limit);
    }

    /** The cursor, if set. */
    public Optional<String> cursor() {
        return Optional.ofNullable(cursor);
    }

    ListSandboxesRequest toRequest() {
        ListSandboxesRequest.Builder request =
                ListSandboxesRequest.newBuilder().addAllStates(states).addAllNotStates(notStates);
        if (includeTerminated) {
            request.setIncludeTerminated(true);
        }
        if (limit != null) {
            request.setLimit(limit);
        }
        if (cursor != null) {
            request.setCursor(cursor);
        }
        return request.build();
    }

    private static List<String> copy(String[] values) {
        List<String> list = Arrays.asList(values);
        list.forEach(v -> Objects.requireNonNull(v, "state must not be null"));
        return List.copyOf(list);
    }

    @Override
    public String toString() {
        return "ListOptions[includeTerminated=" + includeTerminated + ", states=" + states + ", notStates=" + notStates
                + ", limit=" + limit + ", cursor=" + cursor + "]";
    }
}
