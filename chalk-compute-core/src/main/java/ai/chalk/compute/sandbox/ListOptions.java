package ai.chalk.compute.sandbox;

import ai.chalk.compute.proto.sandbox.v1.ListSandboxesRequest;
import ai.chalk.compute.proto.sandbox.v2.SandboxStatus;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * Which sandboxes to list, and which page. Immutable; each method returns new options.
 *
 * <pre>{@code
 * SandboxPage page = client.list(ListOptions.defaults().includeTerminated(true).limit(20));
 * }</pre>
 */
public final class ListOptions {

    private static final ListOptions DEFAULTS =
            new ListOptions(false, List.of(), List.of(), null, null, List.of(), Map.of());

    private final boolean includeTerminated;
    private final List<String> states;
    private final List<String> notStates;
    private final Integer limit;
    private final String cursor;
    private final List<String> names;
    private final Map<String, String> tags;

    private ListOptions(
            boolean includeTerminated,
            List<String> states,
            List<String> notStates,
            Integer limit,
            String cursor,
            List<String> names,
            Map<String, String> tags) {
        this.includeTerminated = includeTerminated;
        this.states = states;
        this.notStates = notStates;
        this.limit = limit;
        this.cursor = cursor;
        this.names = names;
        this.tags = tags;
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
        return new ListOptions(include, states, notStates, limit, cursor, names, tags);
    }

    /**
     * Only sandboxes in one of these states, for example {@code "RUNNING"}.
     *
     * @param states state names
     * @return new options
     */
    public ListOptions states(String... states) {
        return new ListOptions(includeTerminated, copy(states), notStates, limit, cursor, names, tags);
    }

    /**
     * Only sandboxes in none of these states.
     *
     * @param states state names
     * @return new options
     */
    public ListOptions notStates(String... states) {
        return new ListOptions(includeTerminated, this.states, copy(states), limit, cursor, names, tags);
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
        return new ListOptions(includeTerminated, states, notStates, limit, cursor, names, tags);
    }

    /**
     * The page after the one that returned this cursor.
     *
     * @param cursor a {@link SandboxPage#nextCursor()}
     * @return new options
     */
    public ListOptions cursor(String cursor) {
        return new ListOptions(
                includeTerminated, states, notStates, limit, Objects.requireNonNull(cursor, "cursor"), names, tags);
    }

    /**
     * Only sandboxes with one of these names ({@link SandboxDefinition.Builder#name(String)}).
     *
     * @param names sandbox names
     * @return new options
     */
    public ListOptions names(String... names) {
        return new ListOptions(includeTerminated, states, notStates, limit, cursor, copy(names), tags);
    }

    /**
     * Only sandboxes carrying this tag ({@link SandboxDefinition.Builder#tag(String, String)}); with several tags, sandboxes
     * carrying all of them. The server lists by name and state; tags are matched by the client on each page, so a
     * page may hold fewer sandboxes than the {@link #limit(int)} (even none) and still have a next cursor:
     * {@link SandboxClient#listAll(ListOptions)} reads every page. Listings by name or tag come from the server's
     * v2 listing, which shows a suspended sandbox as {@code RUNNING} (its status message says it is suspended).
     *
     * @param key   the tag's key
     * @param value its value
     * @return new options
     */
    public ListOptions tag(String key, String value) {
        Map<String, String> more = new LinkedHashMap<>(tags);
        more.put(Objects.requireNonNull(key, "tag key"), Objects.requireNonNull(value, () -> "value of tag " + key));
        return new ListOptions(
                includeTerminated, states, notStates, limit, cursor, names, Collections.unmodifiableMap(more));
    }

    /**
     * Only sandboxes carrying all these tags; see {@link #tag(String, String)}.
     *
     * @param tags keys and values
     * @return new options
     */
    public ListOptions tags(Map<String, String> tags) {
        ListOptions options = this;
        for (Map.Entry<String, String> e : tags.entrySet()) {
            options = options.tag(e.getKey(), e.getValue());
        }
        return options;
    }

    /** The names listed; empty for all. */
    public List<String> names() {
        return names;
    }

    /** The tags a listed sandbox carries; empty for any. */
    public Map<String, String> tags() {
        return tags;
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

    /** Names and tags are filters of {@code chalk.sandbox.v2}'s listing, whose specs carry the tags. */
    boolean needsV2() {
        return !names.isEmpty() || !tags.isEmpty();
    }

    /**
     * The v2 request for these options. v2 filters by status, not v1's state names: a state maps to its status
     * (SUSPENDED to RUNNING, as v2 reports a suspended sandbox); without states, sandboxes that have not ended
     * unless terminated ones are included; excluded states are taken out.
     */
    ai.chalk.compute.proto.sandbox.v2.ListSandboxesRequest toV2Request() {
        Set<SandboxStatus> statuses = new LinkedHashSet<>();
        if (!states.isEmpty()) {
            states.forEach(state -> statuses.add(status(state)));
        } else if (!includeTerminated) {
            statuses.add(SandboxStatus.SANDBOX_STATUS_PENDING);
            statuses.add(SandboxStatus.SANDBOX_STATUS_RUNNING);
        } else if (!notStates.isEmpty()) {
            for (SandboxStatus s : SandboxStatus.values()) {
                if (s != SandboxStatus.SANDBOX_STATUS_UNSPECIFIED && s != SandboxStatus.UNRECOGNIZED) {
                    statuses.add(s);
                }
            }
        }
        // a state's status is excluded only when every state of it is: SUSPENDED alone leaves RUNNING listed
        notStates.stream()
                .map(ListOptions::status)
                .filter(s -> s != SandboxStatus.SANDBOX_STATUS_RUNNING
                        || (notStates.stream().anyMatch("RUNNING"::equalsIgnoreCase)
                                && notStates.stream().anyMatch("SUSPENDED"::equalsIgnoreCase)))
                .forEach(statuses::remove);
        var filters = ai.chalk.compute.proto.sandbox.v2.ListSandboxesFilters.newBuilder()
                .addAllNames(names)
                .addAllStatuses(statuses);
        var request = ai.chalk.compute.proto.sandbox.v2.ListSandboxesRequest.newBuilder()
                .setFilters(filters);
        if (limit != null) {
            request.setLimit(limit);
        }
        if (cursor != null) {
            request.setCursor(cursor);
        }
        return request.build();
    }

    /** Whether a listed sandbox carries every tag asked for. */
    boolean matchesTags(SandboxInfo info) {
        return info.tags().entrySet().containsAll(tags.entrySet());
    }

    private static SandboxStatus status(String state) {
        String upper = state.trim().toUpperCase(Locale.ROOT);
        if (upper.equals("SUSPENDED")) {
            return SandboxStatus.SANDBOX_STATUS_RUNNING;
        }
        try {
            return SandboxStatus.valueOf("SANDBOX_STATUS_" + upper);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("unknown sandbox state \"" + state
                    + "\"; states are PENDING, RUNNING, SUSPENDED, TERMINATED, FAILED");
        }
    }

    private static List<String> copy(String[] values) {
        List<String> list = Arrays.asList(values);
        list.forEach(v -> Objects.requireNonNull(v, "a state or name must not be null"));
        return List.copyOf(list);
    }

    @Override
    public String toString() {
        return "ListOptions[includeTerminated=" + includeTerminated + ", states=" + states + ", notStates=" + notStates
                + ", limit=" + limit + ", cursor=" + cursor + ", names=" + names + ", tags=" + tags + "]";
    }
}
