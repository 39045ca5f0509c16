package ai.chalk.compute.cli;

import ai.chalk.compute.image.Image;
import ai.chalk.compute.image.ImageBuild;
import ai.chalk.compute.sandbox.SandboxClient;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code chalk-compute image build}: an image built on the server ahead of time, its progress shown. */
@CommandLine.Command(
        name = "image",
        description = "Build images on the server.",
        subcommands = {ImageCommands.Build.class})
final class ImageCommands extends CommandGroup {

    ImageCommands() {
        super("build");
    }

    @CommandLine.Command(
            name = "build",
            description = {
                "Build an image on the server (its steps shown on stderr as they run) and print its reference.",
                "From --dockerfile, or from --base with --apt, --pip, --run, --env and --workdir steps in that order."
            })
    static final class Build implements Callable<Integer> {
        @Mixin
        CommandContext context;

        @Option(names = "--base", description = "The base image (default: the SDK's Debian slim with Python).")
        @Nullable
        String base;

        @Option(names = "--dockerfile", description = "A Dockerfile to build instead of steps.")
        @Nullable
        Path dockerfile;

        @Option(names = "--apt", paramLabel = "PACKAGE", split = ",", description = "Debian packages to install.")
        List<String> apt = new ArrayList<>();

        @Option(names = "--pip", paramLabel = "PACKAGE", split = ",", description = "Python packages to install.")
        List<String> pip = new ArrayList<>();

        @Option(names = "--run", paramLabel = "COMMAND", description = "A shell command run at build time.")
        List<String> run = new ArrayList<>();

        @Option(names = "--env", paramLabel = "NAME=VALUE", description = "An environment variable of the image.")
        Map<String, String> env = new LinkedHashMap<>();

        @Option(names = "--workdir", description = "The image's working directory.")
        @Nullable
        String workdir;

        @Option(names = "--tag", description = "Another name for it on the server, such as my-team/app:v1.")
        @Nullable
        String tag;

        @Override
        public Integer call() {
            Image image = image();
            PrintWriter out = context.out();
            try (SandboxClient client = context.connect()) {
                ImageBuild build = client.images().build(image, tag);
                if (!build.status().ready()) {
                    // the progress display above shows the failing step's output
                    context.err()
                            .println("error: build " + build.buildId() + " failed: "
                                    + build.error().orElse("see its steps above"));
                    return ChalkComputeCli.FAILED;
                }
                out.println(build.imageRef());
            }
            return 0;
        }

        Image image() {
            if (dockerfile != null) {
                if (base != null || !apt.isEmpty() || !pip.isEmpty() || !run.isEmpty()) {
                    throw new CommandLine.ParameterException(
                            context.commandLine(),
                            "--dockerfile builds that file: leave out --base, --apt, --pip, --run");
                }
                Image image = Image.fromDockerfile(dockerfile);
                return env.isEmpty() ? image : image.env(env);
            }
            Image image = base == null ? Image.debianSlim() : Image.base(base);
            if (!apt.isEmpty()) {
                image = image.aptInstall(apt);
            }
            if (!pip.isEmpty()) {
                image = image.pipInstall(pip);
            }
            if (!run.isEmpty()) {
                image = image.runCommands(run);
            }
            if (!env.isEmpty()) {
                image = image.env(env);
            }
            if (workdir != null) {
                image = image.workdir(workdir);
            }
            return image;
        }
    }
}
