package ai.chalk.compute.server.runtime.host;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The isolation tools found on a search path, and whether they actually work here. Helpers that run inside a
 * sandbox ({@code setpriv}, {@code setsid}, {@code env}) must live under a directory the sandbox sees read-only.
 */
public final class HostTools {

    /** The PATH every sandbox process starts with, and where the host's tools are looked for. */
    public static final String DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

    private final Map<String, Path> found;

    private HostTools(Map<String, Path> found) {
        this.found = found;
    }

    public static HostTools find(String searchPath, List<Path> visibleDirs) {
        java.util.LinkedHashMap<String, Path> found = new java.util.LinkedHashMap<>();
        for (String name : List.of("bwrap", "unshare", "nsenter", "setpriv", "setsid", "env", "perl")) {
            which(name, searchPath).ifPresent(p -> found.put(name, p));
        }
        // helpers exec'd inside a sandbox are named by their real path, which must be in the sandbox's view
        for (String helper : List.of("setpriv", "setsid", "env", "perl")) {
            Path p = found.get(helper);
            if (p != null && visibleDirs.stream().noneMatch(d -> p.startsWith(d))) {
                found.remove(helper);
            }
        }
        return new HostTools(Map.copyOf(found));
    }

    public Optional<Path> get(String name) {
        return Optional.ofNullable(found.get(name));
    }

    public Path require(String name) {
        Path p = found.get(name);
        if (p == null) {
            throw new IllegalStateException(name + " is not available");
        }
        return p;
    }

    /** Names missing among {@code names}. */
    public List<String> missing(String... names) {
        List<String> missing = new ArrayList<>();
        for (String n : names) {
            if (!found.containsKey(n)) {
                missing.add(n);
            }
        }
        return missing;
    }

    /** The first executable {@code name} on {@code searchPath}, as a real path (symlinks resolved). */
    public static Optional<Path> which(String name, String searchPath) {
        if (searchPath == null) {
            return Optional.empty();
        }
        for (String dir : searchPath.split(":")) {
            if (dir.isEmpty() || !dir.startsWith("/")) {
                continue;
            }
            Path candidate = Path.of(dir, name);
            if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                try {
                    return Optional.of(candidate.toRealPath());
                } catch (IOException e) {
                    // vanished; keep looking
                }
            }
        }
        return Optional.empty();
    }

    /** The outcome of running a probe command. */
    public record Probe(boolean ok, String output) {}

    /** Runs {@code command} with a clean environment; ok when it exits 0 within ten seconds. */
    public static Probe run(List<String> command) {
        try {
            ProcessBuilder pb = new ProcessBuilder(command)
                    .redirectErrorStream(true)
                    .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
            pb.environment().clear();
            pb.environment().put("PATH", DEFAULT_PATH);
            Process p = pb.start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return new Probe(false, "timed out");
            }
            return new Probe(p.exitValue() == 0, out.isEmpty() ? "exit code " + p.exitValue() : out);
        } catch (IOException e) {
            return new Probe(false, e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Probe(false, "interrupted");
        }
    }
}
