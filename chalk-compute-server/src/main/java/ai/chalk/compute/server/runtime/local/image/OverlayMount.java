package ai.chalk.compute.server.runtime.local.image;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Overlay mounts of image layers, made by the server (as root) with util-linux {@code mount}: the image's layers
 * read-only below, a writable upper directory on top. Always {@code nodev}: a layer or a build step may hold a
 * device node, and nothing in a sandbox may open one through its root. Paths in the options are relative to a
 * base directory (the runtime's state directory, where {@code mount} runs), which keeps the options short (the
 * kernel takes one page) and free of characters the option syntax reserves.
 */
public final class OverlayMount {

    private static final Logger log = LoggerFactory.getLogger(OverlayMount.class);
    private static final int MAX_OPTIONS = 4000;

    private OverlayMount() {}

    /**
     * Mounts {@code layers} (bottom first) under {@code upper} at {@code target}.
     *
     * @param base   a directory that holds every layer, {@code upper} and {@code work}
     * @param nosuid whether set-id bits are ignored (sandboxes: they cannot gain privileges anyway)
     */
    public static void mount(Path base, List<Path> layers, Path upper, Path work, Path target, boolean nosuid)
            throws IOException {
        List<String> lower = new ArrayList<>();
        for (int i = layers.size() - 1; i >= 0; i--) { // overlayfs lists the top layer first
            lower.add(relative(base, layers.get(i)));
        }
        String options = "lowerdir=" + String.join(":", lower) + ",upperdir=" + relative(base, upper) + ",workdir="
                + relative(base, work) + ",nodev" + (nosuid ? ",nosuid" : "");
        if (options.length() > MAX_OPTIONS) {
            throw new IOException("the image has too many layers (" + layers.size() + ") for one overlay mount");
        }
        run(base, List.of(tool("mount"), "-t", "overlay", "-o", options, "chalk-overlay", target.toString()));
    }

    /** Unmounts {@code target}; when it is busy, detaches it lazily. */
    public static void unmount(Path target) throws IOException {
        try {
            run(Path.of("/"), List.of(tool("umount"), target.toString()));
        } catch (IOException e) {
            log.debug("Unmounting {} failed ({}); detaching it", target, e.getMessage());
            run(Path.of("/"), List.of(tool("umount"), "-l", target.toString()));
        }
    }

    /** Whether something is mounted at {@code target}. */
    public static boolean mounted(Path target) {
        return mountsUnder(target).contains(target);
    }

    /** Unmounts everything mounted at or below {@code dir}, deepest first; failures are logged. */
    public static void unmountAllUnder(Path dir) {
        List<Path> mounts = mountsUnder(dir);
        mounts.sort(Comparator.comparingInt(Path::getNameCount).reversed());
        for (Path m : mounts) {
            try {
                unmount(m);
                log.info("Unmounted leftover {}", m);
            } catch (IOException e) {
                log.warn("Cannot unmount leftover {}: {}", m, e.getMessage());
            }
        }
    }

    /** Mount points at or below {@code dir}, from {@code /proc/self/mountinfo}. */
    public static List<Path> mountsUnder(Path dir) {
        List<Path> found = new ArrayList<>();
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"), StandardCharsets.UTF_8)) {
                String[] f = line.split(" ");
                if (f.length > 4) {
                    Path p = Path.of(unescape(f[4]));
                    if (p.startsWith(dir)) {
                        found.add(p);
                    }
                }
            }
        } catch (IOException e) {
            log.warn("Cannot read /proc/self/mountinfo: {}", e.toString());
        }
        return found;
    }

    /** mountinfo writes space, tab, newline and backslash as three octal digits. */
    private static String unescape(String s) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\\' && i + 3 < s.length() + 0 && s.substring(i + 1, i + 4).matches("[0-7]{3}")) {
                b.append((char) Integer.parseInt(s.substring(i + 1, i + 4), 8));
                i += 3;
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }

    private static String relative(Path base, Path p) throws IOException {
        Path r = base.relativize(p.normalize());
        if (!p.normalize().startsWith(base) || r.toString().isEmpty()) {
            throw new IOException(p + " is not inside " + base);
        }
        String s = r.toString();
        if (s.contains(",") || s.contains(":") || s.contains("\\")) {
            throw new IOException("cannot name " + s + " in overlay options");
        }
        return s;
    }

    private static String tool(String name) throws IOException {
        for (String dir : List.of("/usr/bin", "/bin", "/usr/sbin", "/sbin")) {
            Path p = Path.of(dir, name);
            if (Files.isExecutable(p)) {
                return p.toString();
            }
        }
        throw new IOException("util-linux " + name + " is not installed on this host");
    }

    private static void run(Path dir, List<String> command) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(command)
                .directory(dir.toFile())
                .redirectErrorStream(true)
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        pb.environment().clear();
        pb.environment().put("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        try {
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException(String.join(" ", command) + " timed out");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while running " + command.get(0), e);
        }
        if (p.exitValue() != 0) {
            throw new IOException(
                    command.get(0) + " failed (exit code " + p.exitValue() + ")" + (out.isEmpty() ? "" : ": " + out));
        }
    }
}
