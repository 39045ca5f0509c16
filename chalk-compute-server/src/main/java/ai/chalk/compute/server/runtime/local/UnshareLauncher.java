package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.host.HostTools;
import ai.chalk.compute.server.runtime.local.cgroup.CgroupEntry;
import ai.chalk.compute.server.runtime.local.cgroup.SandboxCgroup;
import ai.chalk.compute.server.runtime.userns.UserNamespace;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Starts a sandbox's init with util-linux {@code unshare} where bubblewrap is missing: the init script mounts the
 * sandbox's root itself and reports its pid on stderr before it says it is ready.
 */
final class UnshareLauncher extends InitLauncher {

    @Override
    SandboxInit launch(Request request) throws RuntimeStartException, IOException {
        LocalRuntime runtime = request.runtime();
        HostTools tools = runtime.tools();
        boolean fromImage = request.fromImage();
        SandboxCommands.UnshareRoot root = fromImage
                ? SandboxCommands.UnshareRoot.image(runtime.sandboxTools())
                : SandboxCommands.UnshareRoot.host(tools.require("setpriv"));
        SandboxFilter filter = runtime.syscallFilter();
        SandboxCommands.Helpers helpers =
                fromImage ? SandboxCommands.Helpers.image(runtime.sandboxTools()) : SandboxCommands.Helpers.host(tools);
        List<String> init = SandboxCommands.unshareInit(
                tools.require("unshare"),
                tools.require("setpriv"),
                root,
                request.hostname(),
                request.mounts(),
                filter.filter().execPrefixParts(helpers.perl()),
                request.userns().map(UserNamespace::path),
                helpers.nsenter());
        // in a mount table without the other sandboxes' layers: its mount commands each read the table again
        List<String> own = new java.util.ArrayList<>(runtime.ownMountTable(request.dir()));
        own.addAll(init);
        SandboxCgroup groups = request.groups();
        List<String> command = CgroupEntry.command(
                groups == null ? List.of() : groups.initProcsFiles(),
                runtime.defaults().openFiles(),
                own);
        Process p = runtime.spawnInit(SandboxCommands.hostProcess(command, ProcessBuilder.Redirect.DISCARD)
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))));
        BufferedReader err = new BufferedReader(new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8));
        String said = awaitReady(runtime, p, err, "unshare");
        String pidLine = said.lines()
                .filter(l -> l.startsWith(SandboxCommands.INIT_PID))
                .findFirst()
                .orElseThrow(
                        () -> new RuntimeStartException("unshare did not report its sandbox's pid (" + said + ")"));
        long pid = Long.parseLong(
                pidLine.substring(SandboxCommands.INIT_PID.length()).trim());
        return started(p, pid, filter);
    }
}
