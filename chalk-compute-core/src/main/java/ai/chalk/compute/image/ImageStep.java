package ai.chalk.compute.image;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.OptionalInt;

/**
 * One build step of an {@link Image}, in the order it runs. Each step becomes one layer of the
 * built image.
 */
public sealed interface ImageStep {

    /**
     * Shell commands run one after another, each as a Dockerfile {@code RUN} instruction.
     *
     * @param commands the shell commands, in order
     */
    record RunCommands(List<String> commands) implements ImageStep {
        /** Creates the step; the list is copied. */
        public RunCommands {
            commands = List.copyOf(commands);
        }
    }

    /**
     * Python packages installed with {@code pip install}.
     *
     * @param packages package requirements such as {@code "pandas"} or {@code "numpy==2.1.0"}
     */
    record PipInstall(List<String> packages) implements ImageStep {
        /** Creates the step; the list is copied. */
        public PipInstall {
            packages = List.copyOf(packages);
        }
    }

    /**
     * A file written into the image, with its content carried in the spec.
     *
     * @param destination the absolute path of the file in the image
     * @param content     the file's bytes
     * @param mode        the file's permission bits (for example {@code 0755}), or empty for the builder's default
     */
    record AddFile(String destination, byte[] content, OptionalInt mode) implements ImageStep {
        /** Creates the step; the content is copied. */
        public AddFile {
            Objects.requireNonNull(destination, "destination");
            content = content.clone();
            Objects.requireNonNull(mode, "mode");
        }

        /** The file's bytes (a copy). */
        @Override
        public byte[] content() {
            return content.clone();
        }

        byte[] contentUnsafe() {
            return content;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof AddFile other
                    && destination.equals(other.destination)
                    && Arrays.equals(content, other.content)
                    && mode.equals(other.mode);
        }

        @Override
        public int hashCode() {
            return Objects.hash(destination, Arrays.hashCode(content), mode);
        }

        @Override
        public String toString() {
            return "AddFile[destination=" + destination + ", " + content.length + " bytes"
                    + (mode.isPresent() ? ", mode=0" + Integer.toOctalString(mode.getAsInt()) : "") + "]";
        }
    }

    /**
     * Raw Dockerfile instructions, such as {@code "EXPOSE 8080"}.
     *
     * @param commands the instructions, in order
     */
    record DockerfileCommands(List<String> commands) implements ImageStep {
        /** Creates the step; the list is copied. */
        public DockerfileCommands {
            commands = List.copyOf(commands);
        }
    }
}
