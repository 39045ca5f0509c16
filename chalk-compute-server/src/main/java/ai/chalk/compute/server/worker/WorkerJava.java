package ai.chalk.compute.server.worker;

import ai.chalk.compute.server.runtime.SandboxRuntime;
import ai.chalk.compute.server.runtime.SandboxSpec;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The Java a function worker runs on, and the root it runs in: the server's own Java on the runtime's default root
 * (the local runtime, whose sandboxes see the host's {@code /usr}), or the {@code java} of a JRE image (the docker
 * runtime: a container cannot run the host's JDK without binding it in, and its libraries need not match the
 * image's).
 */
public final class WorkerJava {

    /** The oldest Java feature release a worker may run: the release the worker library is compiled for. */
    public static final int MIN_FEATURE = 17;
    /** The test image {@code ci/build-test-images.sh jre} builds from Debian's packages. */
    public static final String TEST_IMAGE = "chalk-compute-test/jre:17";

    private final Optional<String> image;

    private WorkerJava(Optional<String> image) {
        this.image = image;
    }

    /** Workers run the server's own Java ({@code java.home}) on the runtime's default root. */
    public static WorkerJava serverJava() {
        return new WorkerJava(Optional.empty());
    }

    /** Workers run the {@code java} found on the PATH of {@code image}. */
    public static WorkerJava image(String image) {
        Objects.requireNonNull(image, "image");
        if (image.isBlank()) {
            throw new IllegalArgumentException("the worker image must not be empty");
        }
        return new WorkerJava(Optional.of(image.trim()));
    }

    /**
     * The worker image when none is set: Eclipse Temurin's JRE of the server's own feature release, so that code
     * built for the Java the server runs on runs in its workers (pulled on first use where a registry is reachable).
     */
    public static String defaultImage() {
        return "eclipse-temurin:" + Runtime.version().feature() + "-jre";
    }

    /** The image replicas start from; empty for the runtime's default root. */
    public Optional<String> image() {
        return image;
    }

    /** The program a replica's sandbox runs, followed by {@code javaArgs}. */
    List<String> command(List<String> javaArgs) {
        List<String> command = new ArrayList<>();
        if (image.isEmpty()) {
            command.add(javaHome().resolve("bin/java").toString());
        } else {
            // The worker creates its socket in /chalk/run, a host directory: as root in the container, with the
            // usual umask 022, the socket would be 0755, which a server running as another user may not connect
            // to (connecting needs write permission). The directory is private to the server on the host.
            command.addAll(List.of("/bin/sh", "-c", "umask 000 && exec java \"$@\"", "java"));
        }
        command.addAll(javaArgs);
        return command;
    }

    /** What a replica binds besides its code and run directory: the server's Java where the sandbox lacks it. */
    List<SandboxSpec.VolumeBinding> bindings(SandboxRuntime runtime) {
        if (image.isPresent()) {
            return List.of();
        }
        Path home = javaHome();
        // the host's /usr is visible in a default local sandbox; elsewhere (another path, a container) it is bound
        if (!home.startsWith("/usr") || !runtime.sandboxesSeeHostSystem()) {
            return List.of(new SandboxSpec.VolumeBinding(home, home.toString(), true));
        }
        return List.of();
    }

    /** Says what runs workers, for messages: "the server's Java (...)" or "image X". */
    public String describe() {
        return image.map(i -> "the java of image \"" + i + "\"").orElse("the server's Java (" + javaHome() + ")");
    }

    /** How to provide a working worker image, for messages; empty for the server's Java. */
    public String remedy() {
        return image.isEmpty()
                ? ""
                : "function workers on this server run in a JRE image (Java " + MIN_FEATURE
                        + " or newer, java on its PATH, /bin/sh): build one from Debian's packages with"
                        + " ci/build-test-images.sh jre (" + TEST_IMAGE + ") or pull one (e.g. " + defaultImage()
                        + "), and name it with --worker-image (ComputeServer.Builder.workerImage)";
    }

    private static Path javaHome() {
        return Path.of(System.getProperty("java.home")).toAbsolutePath().normalize();
    }

    @Override
    public String toString() {
        return describe();
    }
}
