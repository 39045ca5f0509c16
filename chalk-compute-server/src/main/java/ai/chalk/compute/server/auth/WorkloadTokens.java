package ai.chalk.compute.server.auth;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The rotating tokens of deployed code: each workload (a function's replica, a sandbox with workload identity) gets a
 * directory of its own under {@code <data-dir>/identity}, bound read-only into it, holding a {@value #FILE_NAME} file
 * with an access token for its environment. The server rewrites every file well before its token expires (the SDK
 * re-reads it, see {@code CHALK_WEB_IDENTITY_TOKEN_FILE}); the workload cannot change it, and its token acts in its
 * own environment only, and only while the workload is issued ({@link #live}).
 */
public final class WorkloadTokens implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(WorkloadTokens.class);
    /** The token file's name in a workload's directory. */
    public static final String FILE_NAME = "token";
    /** A workload's token lives this long; it is rewritten after a third of it. */
    static final Duration LIFETIME = Duration.ofHours(1);

    private static final Pattern KEY = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");

    private final Tokens tokens;
    private final Path root;
    private final Map<String, Caller> workloads = new ConcurrentHashMap<>();
    /** How many issued workloads act as each caller (a function's replicas share one). */
    private final Map<Caller, Integer> live = new ConcurrentHashMap<>();

    private final ScheduledFuture<?> refresh;

    WorkloadTokens(Tokens tokens, Path root, ScheduledExecutorService timers) throws IOException {
        this.tokens = tokens;
        this.root = root;
        // no other user of the host may reach a token; a workload, whatever user it runs as, reads its own through
        // its bind mount, where the path starts at its directory (0755) and this one's mode does not apply
        Files.createDirectories(root);
        Files.setPosixFilePermissions(root, PosixFilePermissions.fromString("rwx------"));
        long every = LIFETIME.dividedBy(3).toSeconds();
        this.refresh = timers.scheduleWithFixedDelay(this::refreshAll, every, every, TimeUnit.SECONDS);
    }

    /**
     * Writes the first token of {@code workload} and returns the directory to bind read-only into it.
     *
     * @param key the workload's id (a replica or sandbox id), safe as a file name
     */
    public synchronized Path issue(String key, Caller workload) {
        if (!KEY.matcher(key).matches() || workload.kind() != Caller.Kind.WORKLOAD) {
            throw new IllegalArgumentException("not a workload: " + key + " " + workload.kind());
        }
        Path dir = root.resolve(key);
        try {
            if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
                Files.createDirectory(dir);
            }
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot make the identity directory of " + key, e);
        }
        Caller before = workloads.put(key, workload);
        if (!workload.equals(before)) {
            live.merge(workload, 1, Integer::sum);
            if (before != null) {
                ended(before);
            }
        }
        write(key, workload);
        return dir;
    }

    /**
     * Whether a workload acting as {@code caller} is issued now: a token of one that ended (a terminated sandbox, a
     * stopped replica) is refused, though it has not expired. Before, it kept acting in its environment through the
     * replicas' socket, which every replica of every environment reaches, for up to {@link #LIFETIME}.
     */
    boolean live(Caller caller) {
        return live.containsKey(caller);
    }

    private void ended(Caller caller) {
        live.computeIfPresent(caller, (c, n) -> n == 1 ? null : n - 1);
    }

    /** Stops refreshing {@code key}'s token and removes its directory (its last token expires by itself). */
    public synchronized void release(String key) {
        Caller released = workloads.remove(key);
        if (released == null) {
            return;
        }
        ended(released);
        Path dir = root.resolve(key);
        try {
            Files.deleteIfExists(dir.resolve(FILE_NAME));
            Files.deleteIfExists(dir);
        } catch (IOException e) {
            log.debug("Identity directory of {} left behind: {}", key, e.toString());
        }
    }

    /** The token file of {@code key}, while it is issued. */
    Optional<Path> file(String key) {
        return workloads.containsKey(key) ? Optional.of(root.resolve(key).resolve(FILE_NAME)) : Optional.empty();
    }

    private void refreshAll() {
        workloads.forEach(this::write);
    }

    private void write(String key, Caller workload) {
        Path dir = root.resolve(key);
        Path tmp = dir.resolve("." + FILE_NAME + ".tmp");
        try {
            Files.writeString(
                    tmp, tokens.access(workload, Optional.empty(), LIFETIME).token(), StandardCharsets.UTF_8);
            Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rw-r--r--"));
            Files.move(
                    tmp, dir.resolve(FILE_NAME), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException | RuntimeException e) {
            // the old token stays valid for two more refreshes
            log.warn("Cannot refresh the workload token of {}: {}", key, e.toString());
        }
    }

    @Override
    public void close() {
        refresh.cancel(false);
    }
}
