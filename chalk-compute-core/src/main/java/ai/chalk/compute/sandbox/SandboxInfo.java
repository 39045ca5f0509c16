package ai.chalk.compute.sandbox;

import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.time.temporal.TemporalAccessor;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import org.slf4j.LoggerFactory;

/**
 * What the server reported about a sandbox when it was last asked.
 *
 * @param id            the sandbox's id
 * @param name          the name given at creation, if any
 * @param state         the lifecycle state as the server names it, for example {@code RUNNING} or {@code TERMINATED}
 * @param createdAt     when it was created; {@code null} if the server did not report a readable time
 * @param statusMessage why it is in its state (for example why it failed or was terminated), if the server said
 * @param buildId       the image build it runs, for sandboxes created from a declarative image
 * @param tags          the tags it was created with ({@link SandboxDefinition.Builder#tags(Map)})
 */
public record SandboxInfo(
        String id,
        Optional<String> name,
        String state,
        Instant createdAt,
        Optional<String> statusMessage,
        Optional<String> buildId,
        Map<String, String> tags) {

    private static final Set<String> FINISHED = Set.of("TERMINATED", "FAILED", "SUCCEEDED", "ERROR");

    /** Validates the fields. */
    public SandboxInfo {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(state, "state");
        Objects.requireNonNull(statusMessage, "statusMessage");
        Objects.requireNonNull(buildId, "buildId");
        tags = Map.copyOf(tags);
    }

    /** Information without tags. */
    public SandboxInfo(
            String id,
            Optional<String> name,
            String state,
            Instant createdAt,
            Optional<String> statusMessage,
            Optional<String> buildId) {
        this(id, name, state, createdAt, statusMessage, buildId, Map.of());
    }

    /** This information with the given tags (v1 answers carry none; v2 keeps them in the spec). */
    SandboxInfo withTags(Map<String, String> tags) {
        return new SandboxInfo(id, name, state, createdAt, statusMessage, buildId, tags);
    }

    /** Whether the sandbox was running (state {@code RUNNING}). */
    public boolean isRunning() {
        return "RUNNING".equalsIgnoreCase(state);
    }

    /** Whether the sandbox has ended for good (terminated, failed or finished) and can run no more commands. */
    public boolean isTerminated() {
        return FINISHED.contains(state.toUpperCase(Locale.ROOT));
    }

    static SandboxInfo fromProto(ai.chalk.compute.proto.sandbox.v1.SandboxInfo p) {
        return new SandboxInfo(
                p.getId(),
                p.hasName() && !p.getName().isEmpty() ? Optional.of(p.getName()) : Optional.empty(),
                p.getState(),
                parseTime(p.getCreatedAt()),
                p.hasStatusMessage() && !p.getStatusMessage().isEmpty()
                        ? Optional.of(p.getStatusMessage())
                        : Optional.empty(),
                p.hasBuildId() && !p.getBuildId().isEmpty() ? Optional.of(p.getBuildId()) : Optional.empty());
    }

    /**
     * A sandbox as {@code chalk.sandbox.v2} describes it; its state is the v2 status without its prefix, so a
     * suspended sandbox shows {@code RUNNING} with a status message saying it is suspended.
     */
    static SandboxInfo fromV2(ai.chalk.compute.proto.sandbox.v2.SandboxInfo p) {
        String state = p.getStatus().name().replace("SANDBOX_STATUS_", "");
        return new SandboxInfo(
                p.getId(),
                p.getName().isEmpty() ? Optional.empty() : Optional.of(p.getName()),
                state,
                p.hasCreatedAt()
                        ? Instant.ofEpochSecond(
                                p.getCreatedAt().getSeconds(), p.getCreatedAt().getNanos())
                        : null,
                p.hasStatusMessage() && !p.getStatusMessage().isEmpty()
                        ? Optional.of(p.getStatusMessage())
                        : Optional.empty(),
                Optional.empty(),
                p.getSpec().getTagsMap());
    }

    /** Parses an ISO-8601 date-time, with or without offset (no offset means UTC), or with a space for the T. */
    static Instant parseTime(String text) {
        if (text == null || text.isBlank()) {
            return null;
        }
        String s = text.trim();
        if (s.length() > 10 && s.charAt(10) == ' ') {
            s = s.substring(0, 10) + 'T' + s.substring(11);
        }
        try {
            TemporalAccessor t =
                    DateTimeFormatter.ISO_DATE_TIME.parseBest(s, OffsetDateTime::from, LocalDateTime::from);
            return t instanceof OffsetDateTime odt ? odt.toInstant() : ((LocalDateTime) t).toInstant(ZoneOffset.UTC);
        } catch (DateTimeParseException e) {
            LoggerFactory.getLogger(SandboxInfo.class).debug("unreadable sandbox creation time {}", text);
            return null;
        }
    }
}
