package ai.chalk.compute.server.sandbox;

import ai.chalk.compute.proto.sandbox.v1.VolumeMount;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.volume.VolumeManager;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

/** Checks the volumes a create request mounts and binds each to its directory. */
final class VolumeMounts {

    /** Plain absolute paths; no '=', ':' or spaces, so they pass through any runtime's mount syntax. */
    private static final Pattern MOUNT_PATH = Pattern.compile("^(/[A-Za-z0-9._-]+)+$");
    /** Where the system or the runtime owns the tree; a volume mounted there would hide or fight it. */
    private static final List<String> RESERVED = List.of(
            "/usr",
            "/etc",
            "/bin",
            "/sbin",
            "/lib",
            "/lib32",
            "/lib64",
            "/libx32",
            "/proc",
            "/dev",
            "/sys",
            "/.chalk",
            "/.chalk-old-root");

    private VolumeMounts() {}

    /**
     * The bindings of the environment's volumes a request mounts; another environment's volumes do not exist here.
     *
     * @param readOnly mount them read-only: a sandbox deployed code creates (through the replicas' socket, or from a
     *     sandbox with an identity) may read its environment's volumes as that code may, and not change what the
     *     developers' own sandboxes and functions, which hold secrets, read from them
     */
    static List<SandboxSpec.VolumeBinding> resolve(
            String environment, List<VolumeMount> mounts, VolumeManager volumes, boolean readOnly) {
        List<SandboxSpec.VolumeBinding> out = new ArrayList<>();
        Set<String> paths = new HashSet<>();
        for (VolumeMount m : mounts) {
            String path = m.getMountPath();
            if (!MOUNT_PATH.matcher(path).matches()
                    || path.contains("/../")
                    || path.endsWith("/..")
                    || path.contains("/./")
                    || path.endsWith("/.")) {
                throw invalid("volumes: mount_path \"" + path + "\" must be a plain absolute path such as /data"
                        + " (letters, digits, '.', '_', '-' between slashes)");
            }
            if (RESERVED.stream().anyMatch(r -> path.equals(r) || path.startsWith(r + "/"))) {
                throw invalid("volumes: mount_path \"" + path + "\" is inside a system directory; mount volumes"
                        + " elsewhere, e.g. /data or /workspace/cache");
            }
            if (!paths.add(path)) {
                throw invalid("volumes: two volumes are mounted at " + path);
            }
            if (m.hasSizeLimit() || m.hasVersionId() || m.hasRefName()) {
                throw ComputeException.refused("volumes: size_limit, version_id and ref_name are"
                        + " not supported by this server; mount volume " + m.getName() + " without them");
            }
            out.add(new SandboxSpec.VolumeBinding(volumes.directory(environment, m.getName()), path, readOnly));
        }
        return out;
    }

    private static RuntimeException invalid(String message) {
        return ComputeException.invalid(message);
    }
}
