package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.host.SandboxTools;
import ai.chalk.compute.server.runtime.local.image.LocalImage;
import ai.chalk.compute.server.runtime.local.image.OverlayMount;
import ai.chalk.compute.server.runtime.userns.UserNamespace;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The root of a sandbox started from an image: an overlay of the image's read-only layers under the sandbox's
 * {@code upper} directory (what it changes, which a snapshot keeps), mounted by the server at the sandbox's
 * {@code root}.
 *
 * <p>The image decides what its root holds, symlinks included, and the runtime then creates, mounts on and changes
 * the mode of a few paths of it as root (bubblewrap's {@code --dir}, {@code --perms}, mount points): a link at one
 * of those would turn that work onto the host. So before the sandbox starts, while nothing else can change the
 * root, each such path is made a real directory (or file) all the way down, whatever the image had there.
 */
final class ImageRoot {

    /** The file the dynamic loader reads from the root it runs in; masked in image sandboxes. */
    static final String PRELOAD = "/etc/ld.so.preload";
    /** Directories every image sandbox needs as real directories. */
    static final List<String> DIRS = List.of("/proc", "/dev", "/tmp", "/var/tmp", "/root", "/etc", SandboxTools.MOUNT);

    private ImageRoot() {}

    static Path upper(Path sandboxDir) {
        return sandboxDir.resolve("upper");
    }

    static Path root(Path sandboxDir) {
        return sandboxDir.resolve("root");
    }

    /**
     * Mounts the image's root at {@code <sandboxDir>/root}, its upper directory seeded from {@code seed} (a
     * snapshot of an earlier sandbox's upper directory on the same image) when given.
     *
     * @param base the runtime's state directory, holding the image cache and the sandbox
     */
    static void mount(Path base, LocalImage image, Path sandboxDir, Optional<Path> seed, Optional<UserNamespace> userns)
            throws IOException {
        Path upper = upper(sandboxDir);
        Path work = sandboxDir.resolve("work");
        Path root = root(sandboxDir);
        Files.createDirectories(sandboxDir);
        if (seed.isPresent()) {
            SandboxFiles.copyTree(seed.get(), upper);
        } else {
            Files.createDirectories(upper);
        }
        Files.createDirectories(work);
        Files.createDirectories(root);
        if (userns.isEmpty()) {
            OverlayMount.mount(base, image.layers(), upper, work, root, true);
            return;
        }
        // the sandbox's view: every layer, and the directory holding upper and work, id-mapped to its ids
        UserNamespace ns = userns.get();
        Path mapped = sandboxDir.resolve("m");
        Files.createDirectories(mapped);
        ns.attachIdMapped(sandboxDir, mapped);
        List<String> lowers = new ArrayList<>();
        for (int i = 0; i < image.layers().size(); i++) {
            Path at = sandboxDir.resolve("l").resolve(Integer.toString(i));
            Files.createDirectories(at);
            ns.attachIdMapped(image.layers().get(i), at);
            lowers.add("l/" + i);
        }
        ns.mountOverlay(sandboxDir, lowers, "m/upper", "m/work", root);
    }

    /** Unmounts the root if it is mounted (terminate, a failed start). */
    static void unmount(Path sandboxDir) throws IOException {
        Path root = root(sandboxDir);
        if (OverlayMount.mounted(root)) {
            OverlayMount.unmount(root);
        }
    }
}
