package ai.chalk.compute.server.runtime.local;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.server.RunningServer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A local user of the server's host without any privilege ({@code nobody}, run with {@code setpriv}) tries to reach
 * what the server keeps: its data directory (store, layers, volumes), the server socket of function replicas, a
 * sandbox's root through {@code /proc/<pid>/root}, and the sandbox's processes.
 */
class HostileLocalUserSecurityTest {

    @Test
    void nobodyOnTheHostReachesNothingTheServerKeeps(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            String id = server.createSandbox();
            String initPid = server.processes()
                    .execCommand(ExecCommandRequest.newBuilder()
                            .setSandboxId(id)
                            .setCommand("sh")
                            .addArgs("-c")
                            .addArgs("echo secret > /root/s; cat /proc/1/status")
                            .build())
                    .getStdout()
                    .toStringUtf8();
            assertThat(initPid).contains("Name:");
            Path sock = dataDir.resolve("functions/server/server.sock");
            String script = String.join(
                    "; ",
                    "ls " + dataDir + "/state 2>&1 | head -1",
                    "cat " + dataDir + "/state/sandboxes/" + id + "/root/root/s 2>&1",
                    "find " + dataDir + " -name '*.mv.db' 2>&1 | head -1",
                    "python3 -c \"import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\" " + sock
                            + " 2>&1 | tail -1",
                    "for p in $(pgrep -f chalk-exec-spare; pgrep -x sleep); do cat /proc/$p/root/root/s 2>&1;"
                            + " kill -9 $p 2>&1; done | sort -u | head -5");
            String said = asNobody(script);
            assertThat(said).doesNotContain("secret").contains("Permission denied");
            assertThat(said).doesNotContain(".mv.db");
            // the sandbox still runs and its file is intact
            assertThat(server.processes()
                            .execCommand(ExecCommandRequest.newBuilder()
                                    .setSandboxId(id)
                                    .setCommand("cat")
                                    .addArgs("/root/s")
                                    .build())
                            .getStdout()
                            .toStringUtf8())
                    .isEqualTo("secret\n");
        }
    }

    private static String asNobody(String script) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--inh-caps=-all",
                "--bounding-set=-all",
                "--",
                "/bin/sh",
                "-c",
                script));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor(60, TimeUnit.SECONDS);
        return out;
    }
}
