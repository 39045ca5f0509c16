package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.host.SandboxTools;
import ai.chalk.compute.server.runtime.local.cgroup.CgroupEntry;
import ai.chalk.compute.server.runtime.local.cgroup.SandboxCgroup;
import ai.chalk.compute.server.runtime.userns.UserNamespace;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Starts a sandbox's init under bubblewrap: its arguments go in on stdin (NUL-separated, {@code --args 0}), bubblewrap
 * puts the init under the init filter itself ({@code --seccomp}) and reports the init's pid, and at the end its exit
 * code, as JSON on stdout, which is a file in the sandbox's state directory ({@link #status}).
 *
 * <p>A file, not a pipe: the server holds no descriptor for an idle sandbox. Each descriptor the server holds is
 * inherited by every process it starts and closed there one by one, so that with 1,000 sandboxes alive, each holding
 * two pipes, a process start cost about 6 ms more of the kernel's time, and every create and exec starts several.
 */
final class BubblewrapLauncher extends InitLauncher {

    private static final Pattern CHILD_PID = Pattern.compile("\"child-pid\"\\s*:\\s*(\\d+)");

    /** Where bubblewrap writes the status of the sandbox whose state directory is {@code dir}. */
    static Path status(Path dir) {
        return dir.resolve("init-status.json");
    }

    @Override
    SandboxInit launch(Request request) throws RuntimeStartException, IOException {
        LocalRuntime runtime = request.runtime();
        List<String> args = SandboxCommands.bubblewrapArgs(
                request.mounts(),
                request.hostname(),
                request.workdir(),
                request.userns().isPresent());
        Path bwrap = runtime.tools().require("bwrap");
        SandboxFilter filter = runtime.syscallFilter();
        SandboxCommands.Helpers helpers = request.fromImage()
                ? SandboxCommands.Helpers.image(runtime.sandboxTools())
                : SandboxCommands.Helpers.host(runtime.tools());
        // bubblewrap puts the init under its filter itself (--seccomp), which lets it join its user namespace
        List<String> steps = SandboxCommands.initSteps(
                helpers,
                request.userns().isPresent(),
                List.of(),
                request.fromImage() ? List.of(SandboxTools.busybox(), "sh") : List.of("/bin/sh"),
                request.fromImage() ? SandboxCommands.imageInitLoop() : SandboxCommands.INIT_LOOP);
        SandboxCgroup groups = request.groups();
        List<String> command = CgroupEntry.command(
                groups == null ? List.of() : groups.initProcsFiles(),
                runtime.defaults().openFiles(),
                SandboxCommands.bubblewrapInitFiles(
                        filter.initFile(), request.userns().map(UserNamespace::path)),
                SandboxCommands.bubblewrapInit(bwrap, runtime.ownMountTable(request.dir()), steps));
        Path status = status(request.dir());
        Process p =
                runtime.spawnInit(SandboxCommands.hostProcess(command, ProcessBuilder.Redirect.to(status.toFile())));
        try (OutputStream in = p.getOutputStream()) {
            for (String a : args) {
                in.write(a.getBytes(StandardCharsets.UTF_8));
                in.write(0);
            }
        } catch (IOException e) {
            // bubblewrap died early; its stderr says why
        }
        BufferedReader err = new BufferedReader(new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8));
        awaitReady(runtime, p, err, "bubblewrap");
        // bubblewrap writes the pid before it lets the sandbox's side go on, so before the init can say it is ready
        String said = Files.readString(status, StandardCharsets.UTF_8).strip();
        Matcher m = CHILD_PID.matcher(said);
        if (!m.find()) {
            p.destroyForcibly();
            throw new RuntimeStartException("bubblewrap did not report its sandbox's pid (" + said + ")");
        }
        long pid = Long.parseLong(m.group(1));
        return started(p, pid, filter);
    }
}
