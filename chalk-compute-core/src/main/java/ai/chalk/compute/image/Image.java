package ai.chalk.compute.image;

import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * A container image described in Java instead of a Dockerfile: a base image, build steps in
 * order, and image-level settings. The server builds and caches it before starting a sandbox.
 *
 * <pre>{@code
 * Image image = Image.debianSlim()
 *         .pipInstall("pandas", "numpy")
 *         .aptInstall("git", "curl")
 *         .workdir("/home/user/app")
 *         .env(Map.of("PYTHONDONTWRITEBYTECODE", "1"));
 * Sandbox sandbox = client.create(Sandbox.builder().image(image));
 * }</pre>
 *
 * <p>An {@code Image} is immutable: every method returns a new image, so a common base can be
 * shared by several images. Two images with the same content have the same {@link #contentHash()}.
 */
public final class Image {

    /** The base image of {@link #debianSlim()}: Python 3.14 on Debian slim (trixie). */
    public static final String DEBIAN_SLIM_BASE = "python:3.14-slim-trixie";

    private static final Pattern SHELL_SAFE = Pattern.compile("[\\w@%+=:,./-]+");

    private final String baseImage;
    private final List<ImageStep> steps;
    private final List<String> entrypoint;
    private final List<String> cmd;
    private final String workdir;
    private final SortedMap<String, String> env;

    private Image(
            String baseImage,
            List<ImageStep> steps,
            List<String> entrypoint,
            List<String> cmd,
            String workdir,
            SortedMap<String, String> env) {
        this.baseImage = baseImage;
        this.steps = steps;
        this.entrypoint = entrypoint;
        this.cmd = cmd;
        this.workdir = workdir;
        this.env = env;
    }

    /**
     * Starts from any existing image.
     *
     * @param baseImage an image reference such as {@code "node:25-trixie-slim"}
     * @return an image with no build steps
     */
    public static Image base(String baseImage) {
        Objects.requireNonNull(baseImage, "baseImage");
        if (baseImage.isBlank()) {
            throw new IllegalArgumentException("baseImage must not be blank");
        }
        return new Image(baseImage, List.of(), List.of(), List.of(), null, Collections.emptySortedMap());
    }

    /** Starts from Python 3.14 on Debian slim ({@value #DEBIAN_SLIM_BASE}). */
    public static Image debianSlim() {
        return base(DEBIAN_SLIM_BASE);
    }

    /**
     * The SDK's default sandbox image: {@link #debianSlim()} with Git, CA certificates and the
     * OpenSSH client installed, working in {@code /workspace}.
     */
    public static Image sandbox() {
        return debianSlim()
                .aptInstall("git", "ca-certificates", "openssh-client")
                .workdir("/workspace");
    }

    /**
     * Adds shell commands run at build time, each as its own {@code RUN} layer.
     *
     * @param commands shell commands, for example {@code "mkdir -p /app/data"}
     * @return a new image with the step appended
     */
    public Image runCommands(String... commands) {
        return runCommands(Arrays.asList(commands));
    }

    /**
     * Adds shell commands run at build time, each as its own {@code RUN} layer.
     *
     * @param commands shell commands
     * @return a new image with the step appended
     */
    public Image runCommands(List<String> commands) {
        requireNoNulls(commands, "commands");
        return withStep(new ImageStep.RunCommands(commands));
    }

    /**
     * Installs Debian/Ubuntu packages with {@code apt-get}. Version pins such as
     * {@code "curl=8.5.0-2"} are allowed. The image's build user must be root.
     *
     * @param packages package names
     * @return a new image with the step appended, or this image when the list is empty
     */
    public Image aptInstall(String... packages) {
        return aptInstall(Arrays.asList(packages));
    }

    /**
     * Installs Debian/Ubuntu packages with {@code apt-get}, as one {@link ImageStep.RunCommands} step:
     * {@code apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ...}
     * with each package shell-quoted.
     *
     * @param packages package names
     * @return a new image with the step appended, or this image when the list is empty
     */
    public Image aptInstall(List<String> packages) {
        requireNoNulls(packages, "packages");
        if (packages.isEmpty()) {
            return this;
        }
        StringBuilder command = new StringBuilder(
                "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends");
        for (String p : packages) {
            command.append(' ').append(shellQuote(p));
        }
        return withStep(new ImageStep.RunCommands(List.of(command.toString())));
    }

    /**
     * Installs Python packages with {@code pip}.
     *
     * @param packages requirements such as {@code "requests"} or {@code "flask>=3"}
     * @return a new image with the step appended, or this image when the list is empty
     */
    public Image pipInstall(String... packages) {
        return pipInstall(Arrays.asList(packages));
    }

    /**
     * Installs Python packages with {@code pip}.
     *
     * @param packages requirements such as {@code "requests"} or {@code "flask>=3"}
     * @return a new image with the step appended, or this image when the list is empty
     */
    public Image pipInstall(List<String> packages) {
        requireNoNulls(packages, "packages");
        return packages.isEmpty() ? this : withStep(new ImageStep.PipInstall(packages));
    }

    /**
     * Copies a local file into the image. The file is read now and its content travels in the
     * spec, so later changes to the local file do not affect this image.
     *
     * @param source      the local file
     * @param destination the absolute path in the image
     * @return a new image with the step appended
     * @throws UncheckedIOException when the file cannot be read
     */
    public Image addLocalFile(Path source, String destination) {
        return withStep(new ImageStep.AddFile(destination, LocalSources.read(source), OptionalInt.empty()));
    }

    /**
     * Copies a local file into the image with the given permission bits.
     *
     * @param source      the local file
     * @param destination the absolute path in the image
     * @param mode        permission bits, for example {@code 0755} for an executable script
     * @return a new image with the step appended
     * @throws UncheckedIOException when the file cannot be read
     */
    public Image addLocalFile(Path source, String destination, int mode) {
        if (mode < 0 || mode > 07777) {
            throw new IllegalArgumentException("mode must be between 0 and 07777, got 0" + Integer.toOctalString(mode));
        }
        return withStep(new ImageStep.AddFile(destination, LocalSources.read(source), OptionalInt.of(mode)));
    }

    /**
     * Starts from a local Dockerfile: its {@code FROM} becomes the base image and its other
     * instructions are inlined as Dockerfile steps (line continuations joined, comments dropped),
     * so more steps can be chained after it. Multi-stage Dockerfiles (a second {@code FROM}) are
     * refused, as are {@code COPY}/{@code ADD} of the build context, which is not sent; use
     * {@link #addLocalFile} or {@link #addLocalDir} for local files.
     *
     * @param dockerfile the Dockerfile to read
     * @return an image with the Dockerfile's instructions as its first steps
     * @throws UncheckedIOException when the file cannot be read
     * @throws IllegalArgumentException when it has no {@code FROM}, or one this method cannot inline
     */
    public static Image fromDockerfile(Path dockerfile) {
        LocalSources.Dockerfile parsed = LocalSources.dockerfile(dockerfile);
        Image image = base(parsed.baseImage());
        return parsed.instructions().isEmpty() ? image : image.dockerfileCommands(parsed.instructions());
    }

    /**
     * Installs the Python packages listed in a local requirements file (read now and inlined;
     * comments, blank lines and pip options such as {@code -r} or {@code --index-url} are not
     * supported and refused).
     *
     * @param requirements a requirements.txt
     * @return a new image with a pip install step
     * @throws UncheckedIOException when the file cannot be read
     */
    public Image pipInstallFromRequirements(Path requirements) {
        return pipInstall(LocalSources.requirements(requirements));
    }

    /**
     * Copies a local directory into the image, recursively: one file step per regular file, in
     * path order (so the image's content hash does not depend on the file system's listing order),
     * keeping each file's permission bits. Symbolic links are not followed.
     *
     * @param source      the local directory
     * @param destination the absolute directory path in the image
     * @return a new image with the files added
     * @throws UncheckedIOException when the directory cannot be read
     */
    public Image addLocalDir(Path source, String destination) {
        List<LocalSources.DirectoryFile> files = LocalSources.directory(source);
        String base = destination.endsWith("/") ? destination.substring(0, destination.length() - 1) : destination;
        Image image = this;
        for (LocalSources.DirectoryFile file : files) {
            image = image.addLocalFile(file.file(), base + "/" + file.relativePath(), file.mode());
        }
        return image;
    }

    /**
     * Adds raw Dockerfile instructions, for example {@code "EXPOSE 8080"}.
     *
     * @param commands Dockerfile instructions
     * @return a new image with the step appended
     */
    public Image dockerfileCommands(List<String> commands) {
        requireNoNulls(commands, "commands");
        return withStep(new ImageStep.DockerfileCommands(commands));
    }

    /**
     * Sets the working directory of processes in the image.
     *
     * @param workdir an absolute path
     * @return a new image with the working directory set
     */
    public Image workdir(String workdir) {
        Objects.requireNonNull(workdir, "workdir");
        return new Image(baseImage, steps, entrypoint, cmd, workdir, env);
    }

    /**
     * Adds environment variables to the image; a variable set earlier is replaced. Values are
     * literal strings: put secrets on the sandbox, not in the image.
     *
     * @param variables variable names and values
     * @return a new image with the variables added
     */
    public Image env(Map<String, String> variables) {
        TreeMap<String, String> merged = new TreeMap<>(env);
        variables.forEach((k, v) -> merged.put(
                Objects.requireNonNull(k, "variable name"), Objects.requireNonNull(v, () -> "value of " + k)));
        return new Image(baseImage, steps, entrypoint, cmd, workdir, Collections.unmodifiableSortedMap(merged));
    }

    /**
     * Adds one environment variable to the image.
     *
     * @param name  the variable's name
     * @param value its value
     * @return a new image with the variable added
     */
    public Image env(String name, String value) {
        return env(Map.of(name, value));
    }

    /**
     * Sets the image's entrypoint, replacing any earlier one.
     *
     * @param entrypoint the program and its arguments
     * @return a new image with the entrypoint set
     */
    public Image entrypoint(List<String> entrypoint) {
        requireNoNulls(entrypoint, "entrypoint");
        return new Image(baseImage, steps, List.copyOf(entrypoint), cmd, workdir, env);
    }

    /**
     * Sets the image's default command (arguments to the entrypoint), replacing any earlier one.
     *
     * @param cmd the command and its arguments
     * @return a new image with the command set
     */
    public Image cmd(List<String> cmd) {
        requireNoNulls(cmd, "cmd");
        return new Image(baseImage, steps, entrypoint, List.copyOf(cmd), workdir, env);
    }

    /** The base image reference. */
    public String baseImage() {
        return baseImage;
    }

    /** The build steps, in the order they run. */
    public List<ImageStep> steps() {
        return steps;
    }

    /** The entrypoint, empty when the base image's applies. */
    public List<String> entrypoint() {
        return entrypoint;
    }

    /** The default command, empty when the base image's applies. */
    public List<String> cmd() {
        return cmd;
    }

    /** The working directory, if set. */
    public Optional<String> workdir() {
        return Optional.ofNullable(workdir);
    }

    /** The environment variables set by the image, sorted by name. */
    public Map<String, String> env() {
        return env;
    }

    /** This image as Chalk's wire message {@code chalk.sandbox.v1.ImageSpec}. */
    public ImageSpec toSpec() {
        return ImageSpecs.of(this);
    }

    /**
     * A stable identity of this image's content: the hex SHA-256 of its spec serialised
     * deterministically (map entries sorted). Equal images have equal hashes in every JVM.
     */
    public String contentHash() {
        return ImageSpecs.contentHash(toSpec());
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Image other
                && baseImage.equals(other.baseImage)
                && steps.equals(other.steps)
                && entrypoint.equals(other.entrypoint)
                && cmd.equals(other.cmd)
                && Objects.equals(workdir, other.workdir)
                && env.equals(other.env);
    }

    @Override
    public int hashCode() {
        return Objects.hash(baseImage, steps, entrypoint, cmd, workdir, env);
    }

    @Override
    public String toString() {
        return "Image[base=" + baseImage + ", steps=" + steps.size() + (workdir != null ? ", workdir=" + workdir : "")
                + "]";
    }

    private Image withStep(ImageStep step) {
        List<ImageStep> next = new ArrayList<>(steps.size() + 1);
        next.addAll(steps);
        next.add(step);
        return new Image(baseImage, List.copyOf(next), entrypoint, cmd, workdir, env);
    }

    /** Quotes a word for a POSIX shell as Python's {@code shlex.quote} does. */
    static String shellQuote(String word) {
        if (word.isEmpty()) {
            return "''";
        }
        if (SHELL_SAFE.matcher(word).matches()) {
            return word;
        }
        return "'" + word.replace("'", "'\"'\"'") + "'";
    }

    private static void requireNoNulls(List<String> values, String what) {
        Objects.requireNonNull(values, what);
        for (String v : values) {
            Objects.requireNonNull(v, () -> what + " must not contain null");
        }
    }
}
