package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.runtime.docker.DockerBuildContext.ContextFile;
import ai.chalk.compute.server.runtime.host.SandboxTools;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The shell every {@code RUN} step of a docker build goes through, because the engine's build API cannot restrict a
 * step's container: copied into the image at {@value SandboxTools#MOUNT} first (a static busybox, util-linux
 * {@code setpriv} with its libraries and loader, so nothing of the image runs before), made the build's
 * {@code SHELL}, it narrows a root step's capabilities to a sandbox's ({@link SandboxContainerDef#KEPT_CAPABILITIES}:
 * no {@code MKNOD}, {@code SETPCAP}, {@code SYS_CHROOT}, {@code NET_RAW}...) and sets {@code no_new_privs} for every
 * step, whoever it runs as. The build's last steps restore the usual shell and remove the helpers. A Dockerfile may
 * therefore not set its own {@code SHELL} nor write {@code RUN} in exec form ({@link DockerfilePolicy}).
 *
 * <p>The helpers live in the image being built, which a root step may write: they are copied in afresh before every
 * {@code RUN} ({@link DockerBuildContext}), so what one step does to them never reaches the next.
 *
 * @param tools   the helpers on the host (a {@link SandboxTools} directory)
 * @param setpriv the command that runs setpriv from {@value SandboxTools#MOUNT} inside the image
 */
record BuildShell(Path tools, List<String> setpriv) {

    /** The script the shell runs, inside the image; it takes the step's command as {@code $1}. */
    static final String SCRIPT = SandboxTools.MOUNT + "/run";
    /** The Dockerfile field of the lines the build adds for itself (the policy does not judge them). */
    static final String FIELD = "the build's own steps";

    /** The shell of a build's steps, from the host's helpers; empty when they are not available here. */
    static java.util.Optional<BuildShell> of(SandboxTools tools) {
        if (tools.problem().isPresent() || !tools.has("setpriv")) {
            return java.util.Optional.empty();
        }
        return java.util.Optional.of(new BuildShell(tools.dir(), tools.command("setpriv")));
    }

    /**
     * The script: root keeps a sandbox's capabilities only; anyone gets no_new_privs. setpriv is the host's, loaded
     * by the host's loader from {@value SandboxTools#MOUNT}, and runs while root still holds every capability the
     * engine gives a step, so nothing of the image may reach that loader: it starts with an empty environment (no
     * {@code LD_PRELOAD}, {@code LD_AUDIT}, {@code GLIBC_TUNABLES}, locale), the step's environment is put back
     * only after the drop, and a step is refused while the image has an {@code /etc/ld.so.preload}, which the loader
     * reads whatever it is told. Nothing else runs in a step's container while this script does.
     */
    String script() {
        StringBuilder bounding = new StringBuilder("--bounding-set=-all");
        SandboxContainerDef.KEPT_CAPABILITIES.forEach(
                c -> bounding.append(",+").append(c.name().toLowerCase(Locale.ROOT)));
        String bb = SandboxTools.busybox();
        return "if [ \"$(" + bb + " id -u)\" = 0 ]; then\n"
                + "  if [ -e /etc/ld.so.preload ] || [ -L /etc/ld.so.preload ]; then\n"
                + "    echo \"" + PRELOAD_REFUSAL + "\" >&2\n"
                + "    exit 126\n"
                + "  fi\n"
                + "  exec " + bb + " env -i " + String.join(" ", setpriv) + " --no-new-privs " + bounding
                + " --inh-caps=-all -- " + bb + " sh -c 'eval \"$1\"; exec /bin/sh -c \"$2\"' chalk-step"
                + " \"$(export -p)\" \"$1\"\n"
                + "fi\n"
                + "exec " + bb + " setpriv --nnp /bin/sh -c \"$1\"\n";
    }

    /**
     * What a root step is told when the image has an {@code /etc/ld.so.preload} (see {@link #script}); said in double
     * quotes by the script, so no quote, dollar or backquote in it.
     */
    static final String PRELOAD_REFUSAL = "chalk: the image has /etc/ld.so.preload (from its base image or an earlier"
            + " step), which would load libraries into the capability drop of the build while it holds every capability;"
            + " a step that runs a command as root cannot come after it: write /etc/ld.so.preload in the last step"
            + " that runs a command";

    /** The {@code SHELL} of the build's steps. */
    static final List<String> SHELL = List.of(SandboxTools.busybox(), "sh", SCRIPT);

    /** The {@code SHELL} of the build's steps. */
    List<String> shell() {
        return SHELL;
    }

    /** The context files under {@code chalk/}: the helpers that setpriv needs, and the script. */
    Map<String, ContextFile> contextFiles() {
        Map<String, ContextFile> files = new LinkedHashMap<>();
        try {
            List<Path> wanted = new ArrayList<>(List.of(tools.resolve("bin/setpriv"), tools.resolve("bin/busybox")));
            try (Stream<Path> libs = Files.list(tools.resolve("lib"))) {
                libs.sorted().forEach(wanted::add);
            }
            for (Path p : wanted) {
                // the loader runs as a program: modes as they are (executables 0755, the other libraries 0644)
                int mode = (Integer) Files.getAttribute(p, "unix:mode") & 0777;
                files.put("chalk/" + tools.relativize(p), new ContextFile(Files.readAllBytes(p), mode));
            }
        } catch (IOException e) {
            throw new java.io.UncheckedIOException("cannot read the build helpers in " + tools, e);
        }
        files.put("chalk/run", new ContextFile(script().getBytes(StandardCharsets.UTF_8), 0644));
        return files;
    }
}
