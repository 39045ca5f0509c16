package ai.chalk.compute.server.runtime.host;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The host helpers an image sandbox's execs run inside it, copied into {@code <state>/tools} with the libraries
 * they load and bound read-only at {@value #MOUNT}: the image's own {@code /usr} and {@code /lib} are the
 * sandbox's to change, and a helper that still holds capabilities ({@code setsid}, {@code setpriv}) must not load
 * anything from there. So each is started through the host's dynamic loader, named by its path under
 * {@value #MOUNT}, with {@code --library-path} onto the copied libraries and {@code --inhibit-cache} (the image's
 * {@code /etc/ld.so.cache} is never read); the one file the loader still reads from the sandbox's root,
 * {@code /etc/ld.so.preload}, is masked by the sandbox set-up (see the local runtime's {@code ImageRoot}). The statically linked
 * busybox runs the sandbox's init, which then needs nothing from the image.
 */
public final class SandboxTools {

    /** Where the tools appear inside an image sandbox. */
    public static final String MOUNT = "/.chalk";

    private static final List<String> DYNAMIC = List.of("setpriv", "setsid", "env", "perl", "nsenter");
    private static final Pattern NEEDED = Pattern.compile("^\\s*(\\S+)\\s+=>\\s+(/\\S+)\\s+\\(");
    private static final Pattern LOADER = Pattern.compile("^\\s*(/\\S+)\\s+\\(");

    private final Path dir;
    private final String loader;
    private final List<String> present;
    private final String problem;

    private SandboxTools(Path dir, String loader, List<String> present, String problem) {
        this.dir = dir;
        this.loader = loader;
        this.present = present;
        this.problem = problem;
    }

    /**
     * Copies the helpers found by {@code tools} and the host's static busybox into {@code dir} (replacing what an
     * earlier run left there). Without setpriv, env or a static busybox, image sandboxes are unavailable and
     * {@link #problem()} says why.
     */
    public static SandboxTools prepare(Path dir, HostTools tools) {
        Optional<Path> busybox = HostTools.which("busybox", "/bin:/usr/bin:/sbin:/usr/sbin");
        if (busybox.isEmpty() || !isStatic(busybox.get())) {
            return unavailable(
                    dir,
                    "images need the statically linked busybox of the host (apt-get install"
                            + " busybox-static) to run a sandbox's init without anything from the image");
        }
        List<String> missing = tools.missing("setpriv", "env");
        if (!missing.isEmpty()) {
            return unavailable(
                    dir,
                    "images need util-linux setpriv and coreutils env on the host (missing: "
                            + String.join(", ", missing) + ")");
        }
        Path partial = dir.resolveSibling(dir.getFileName() + ".partial");
        try {
            NoFollowDelete.delete(partial);
            Files.createDirectories(partial.resolve("bin"));
            Files.createDirectories(partial.resolve("lib"));
            Map<String, Path> libs = new LinkedHashMap<>();
            String loaderPath = null;
            List<String> present = new ArrayList<>();
            for (String name : DYNAMIC) {
                Optional<Path> tool = tools.get(name);
                if (tool.isEmpty()) {
                    continue;
                }
                String l = libraries(tool.get(), libs);
                if (loaderPath != null && !loaderPath.equals(l)) {
                    throw new IOException(tool.get() + " uses another dynamic loader (" + l + ") than " + loaderPath);
                }
                loaderPath = l;
                copy(tool.get(), partial.resolve("bin").resolve(name));
                present.add(name);
            }
            copy(busybox.get(), partial.resolve("bin").resolve("busybox"));
            Path realLoader = Path.of(loaderPath).toRealPath();
            String loaderName = Path.of(loaderPath).getFileName().toString();
            copy(realLoader, partial.resolve("lib").resolve(loaderName));
            for (Map.Entry<String, Path> lib : libs.entrySet()) {
                copy(lib.getValue().toRealPath(), partial.resolve("lib").resolve(lib.getKey()));
            }
            Files.setPosixFilePermissions(partial, PosixFilePermissions.fromString("rwxr-xr-x"));
            NoFollowDelete.delete(dir);
            Files.move(partial, dir, StandardCopyOption.ATOMIC_MOVE);
            return new SandboxTools(dir, MOUNT + "/lib/" + loaderName, List.copyOf(present), null);
        } catch (IOException | RuntimeException e) {
            try {
                NoFollowDelete.delete(partial);
            } catch (IOException ignored) {
                // the next start retries
            }
            return unavailable(dir, "cannot prepare the helpers image sandboxes run (" + e.getMessage() + ")");
        }
    }

    /**
     * The helpers as {@link #prepare} copies them, with the host's own tools (the docker runtime's image builds run
     * their steps through them, see its BuildShell).
     */
    public static SandboxTools forImages(Path dir) {
        return prepare(dir, HostTools.find(HostTools.DEFAULT_PATH, List.of(Path.of("/"))));
    }

    private static SandboxTools unavailable(Path dir, String why) {
        return new SandboxTools(dir, null, List.of(), why);
    }

    /** Why image sandboxes cannot run here, if they cannot. */
    public Optional<String> problem() {
        return Optional.ofNullable(problem);
    }

    /** The host directory bound at {@value #MOUNT}. */
    public Path dir() {
        return dir;
    }

    /** Whether host helper {@code tool} was found and copied. */
    public boolean has(String tool) {
        return present.contains(tool);
    }

    /** The command that runs host helper {@code tool} inside an image sandbox. */
    public List<String> command(String tool) {
        if (!has(tool)) {
            throw new IllegalStateException(tool + " is not available in image sandboxes");
        }
        return List.of(loader, "--inhibit-cache", "--library-path", MOUNT + "/lib", MOUNT + "/bin/" + tool);
    }

    /** The static busybox inside an image sandbox. */
    public static String busybox() {
        return MOUNT + "/bin/busybox";
    }

    /** Adds {@code tool}'s libraries (by the name it asks for) to {@code libs}; returns its dynamic loader. */
    private static String libraries(Path tool, Map<String, Path> libs) throws IOException {
        HostTools.Probe p = HostTools.run(List.of(ldd().toString(), tool.toString()));
        if (!p.ok()) {
            throw new IOException("ldd " + tool + ": " + p.output());
        }
        String loader = null;
        for (String line : p.output().lines().toList()) {
            Matcher m = NEEDED.matcher(line);
            if (m.find()) {
                libs.putIfAbsent(m.group(1), Path.of(m.group(2)));
                continue;
            }
            Matcher l = LOADER.matcher(line);
            if (l.find()) {
                loader = l.group(1);
            }
        }
        if (loader == null) {
            throw new IOException("ldd names no dynamic loader for " + tool);
        }
        return loader;
    }

    private static boolean isStatic(Path binary) {
        try {
            HostTools.Probe p = HostTools.run(List.of(ldd().toString(), binary.toString()));
            return p.output().contains("not a dynamic executable") || p.output().contains("statically linked");
        } catch (IOException e) {
            return false;
        }
    }

    private static Path ldd() throws IOException {
        return HostTools.which("ldd", "/usr/bin:/bin").orElseThrow(() -> new IOException("ldd is not installed"));
    }

    private static void copy(Path from, Path to) throws IOException {
        Files.copy(from, to, StandardCopyOption.REPLACE_EXISTING);
        Files.setPosixFilePermissions(to, PosixFilePermissions.fromString("r-xr-xr-x"));
    }
}
