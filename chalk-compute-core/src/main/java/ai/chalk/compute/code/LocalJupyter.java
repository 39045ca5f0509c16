package ai.chalk.compute.code;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code eval} variant's interpreter: a Python kernel of a Jupyter server that runs as a plain process of this
 * machine, on loopback, with a token of its own, its root directory the working directory. No isolation at all: the
 * snippets have this user's rights over this machine's files, processes and network, and that is logged at WARN each
 * time one starts. The kernel is IPython's, so displays, rich results, interrupts and restarts behave as in the
 * {@code jupyter} and {@code docker} variants.
 */
final class LocalJupyter implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(LocalJupyter.class);
    static final Duration START = Duration.ofSeconds(60);

    final Path workdir;
    final JupyterRunner runner;
    private final Process server;
    private final Path logFile;
    private final boolean ownsWorkdir;

    private LocalJupyter(Path workdir, boolean ownsWorkdir, Process server, Path logFile, JupyterRunner runner) {
        this.workdir = workdir;
        this.ownsWorkdir = ownsWorkdir;
        this.server = server;
        this.logFile = logFile;
        this.runner = runner;
    }

    /** Where eval snapshots are kept: one directory each, with {@link #FILES} and {@link #NAMESPACE}. */
    static final Path SNAPSHOTS = Path.of(System.getProperty("user.home"), ".chalk-compute", "code-snapshots");

    /** A snapshot's copy of the working directory. */
    static final String FILES = "files";

    /** A snapshot's interpreter variables ({@link NamespaceSnapshot}). */
    static final String NAMESPACE = "namespace.pickle";

    /** The directory of the eval snapshot {@code key}, which must exist. */
    static Path snapshot(String key) {
        Path dir = SNAPSHOTS.resolve(key);
        if (!Files.isDirectory(dir.resolve(FILES))) {
            throw new IllegalArgumentException("no eval snapshot " + key + " in " + SNAPSHOTS
                    + " (CodeSnapshot.id() of an eval sandbox's createSnapshot names one)");
        }
        return dir;
    }

    /**
     * Takes an eval snapshot: the kernel writes its variables into a new directory of {@link #SNAPSHOTS}, then the
     * working directory is copied beside them.
     */
    CodeSnapshot snapshot(String name, String key) {
        Path dir = SNAPSHOTS.resolve(key);
        try {
            NamespaceSnapshot saved =
                    NamespaceSnapshot.save(runner, dir.resolve(NAMESPACE).toString());
            copyTree(workdir, dir.resolve(FILES));
            return new CodeSnapshot(name, key, Variant.EVAL, saved, () -> deleteTree(dir));
        } catch (RuntimeException e) {
            deleteTree(dir);
            throw e;
        }
    }

    /**
     * Copies {@code from} into {@code to} (made if missing); a working directory that holds the snapshots' own
     * directory (the home directory) is copied without it.
     */
    static void copyTree(Path from, Path to) {
        try (Stream<Path> all = Files.walk(from)) {
            for (Path p : (Iterable<Path>) all::iterator) {
                if (p.startsWith(SNAPSHOTS) && !from.startsWith(SNAPSHOTS)) {
                    continue;
                }
                Path target = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                    Files.createDirectories(target);
                } else {
                    Files.createDirectories(target.getParent());
                    Files.copy(
                            p,
                            target,
                            java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                            java.nio.file.StandardCopyOption.COPY_ATTRIBUTES,
                            java.nio.file.LinkOption.NOFOLLOW_LINKS);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot copy " + from + " to " + to + ": " + e.getMessage(), e);
        }
    }

    private static void deleteTree(Path dir) {
        if (!Files.exists(dir, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (Stream<Path> all = Files.walk(dir)) {
            all.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete " + dir + ": " + e.getMessage(), e);
        }
    }

    /**
     * Starts a local server and kernel in {@code workingDir} (a new temporary directory when empty), with the files of
     * the snapshot directory {@code from} copied into it first.
     */
    static LocalJupyter start(Optional<String> workingDir, Map<String, String> env, Optional<Path> from) {
        Path logFile;
        Path workdir;
        boolean ownsWorkdir = workingDir.isEmpty();
        try {
            workdir = ownsWorkdir
                    ? Files.createTempDirectory("chalk-eval-")
                    : Files.createDirectories(Path.of(workingDir.get()).toAbsolutePath());
            logFile = Files.createTempFile("chalk-eval-jupyter-", ".log");
            if (from.isPresent()) {
                copyTree(from.get().resolve(FILES), workdir);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot prepare the eval variant's working directory: " + e.getMessage(), e);
        }
        log.warn(
                "code sandbox variant eval: snippets and commands run as plain processes of this machine in {}, with"
                        + " this user's rights and NO isolation; use the chalk or docker variant for untrusted code",
                workdir);
        String token = HexFormat.of().formatHex(random());
        int port = freePort();
        List<String> command = new ArrayList<>(launcher());
        command.addAll(List.of(
                "--no-browser",
                "--ServerApp.ip=127.0.0.1",
                "--ServerApp.port=" + port,
                "--ServerApp.port_retries=0",
                "--ServerApp.root_dir=" + workdir));
        if ("root".equals(System.getProperty("user.name"))) {
            command.add("--allow-root");
        }
        ProcessBuilder builder = new ProcessBuilder(command)
                .directory(workdir.toFile())
                .redirectErrorStream(true)
                .redirectOutput(logFile.toFile());
        builder.environment().putAll(env);
        // the token by environment: a command line is readable by every user of the machine
        builder.environment().put("JUPYTER_TOKEN", token);
        Process process;
        try {
            process = builder.start();
        } catch (IOException e) {
            throw new IllegalStateException(
                    "the eval variant runs a local Jupyter server with a Python kernel, and " + command.get(0)
                            + " cannot be started (" + e.getMessage() + "): install jupyter-server and ipykernel"
                            + " (Debian: apt-get install jupyter-server python3-ipykernel; or pip install"
                            + " jupyter-server ipykernel)",
                    e);
        }
        URI url = URI.create("http://127.0.0.1:" + port + "/");
        try {
            JupyterRunner.awaitServer(
                    url,
                    token,
                    START,
                    () -> process.isAlive()
                            ? Optional.empty()
                            : Optional.of("the eval variant's local Jupyter server ("
                                    + String.join(" ", command.subList(0, 1))
                                    + ") exited with " + process.exitValue() + ": " + tail(logFile)
                                    + " (it needs jupyter-server and ipykernel: Debian's jupyter-server and"
                                    + " python3-ipykernel, or pip install jupyter-server ipykernel)"));
            return new LocalJupyter(workdir, ownsWorkdir, process, logFile, new JupyterRunner(url, token, ""));
        } catch (RuntimeException e) {
            stop(process);
            throw e;
        }
    }

    private static byte[] random() {
        byte[] bytes = new byte[24];
        new SecureRandom().nextBytes(bytes);
        return bytes;
    }

    /** {@code jupyter-server} where it is on the PATH (it brings its own Python), else the module with python3. */
    private static List<String> launcher() {
        String path = Optional.ofNullable(System.getenv("PATH")).orElse("");
        for (String dir : path.split(java.io.File.pathSeparator)) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, "jupyter-server"))) {
                return List.of(Path.of(dir, "jupyter-server").toString());
            }
        }
        return List.of("python3", "-m", "jupyter_server");
    }

    private static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("no free port on loopback for the eval variant's Jupyter server", e);
        }
    }

    private static String tail(Path file) {
        try {
            String text = Files.readString(file, StandardCharsets.UTF_8).strip();
            return text.length() > 2000 ? "..." + text.substring(text.length() - 2000) : text;
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    private static void stop(Process process) {
        process.descendants().forEach(ProcessHandle::destroyForcibly);
        process.destroyForcibly();
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Shuts the kernel and the server down; a working directory this made is deleted. */
    @Override
    public void close() {
        try {
            runner.close();
        } finally {
            stop(server);
            try {
                Files.deleteIfExists(logFile);
                if (ownsWorkdir) {
                    try (Stream<Path> all = Files.walk(workdir)) {
                        all.sorted(Comparator.reverseOrder())
                                .forEach(p -> p.toFile().delete());
                    }
                }
            } catch (IOException | UncheckedIOException e) {
                log.debug("could not clean up {}: {}", workdir, e.toString());
            }
        }
    }
}
