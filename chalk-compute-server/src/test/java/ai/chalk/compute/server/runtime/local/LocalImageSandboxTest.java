package ai.chalk.compute.server.runtime.local;

import static ai.chalk.compute.server.runtime.local.LocalTesting.command;
import static ai.chalk.compute.server.runtime.local.LocalTesting.run;
import static ai.chalk.compute.server.runtime.local.LocalTesting.sh;
import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Local sandboxes whose root is an image's file system. */
class LocalImageSandboxTest {

    static final String BUSYBOX = "chalk-compute-test/busybox:latest";
    static final String DEBIAN = "chalk-compute-test/debian:bookworm";

    @TempDir
    Path state;
    LocalRuntime runtime;

    @BeforeEach
    void start() {
        runtime = new LocalRuntime(state, LocalIsolation.AUTO);
    }

    @AfterEach
    void stop() {
        runtime.close();
    }

    static SandboxSpec imageSpec(String image) {
        return new SandboxSpec(LocalTesting.newId(), image, Map.of("FROM_SPEC", "yes"), "/workspace",
                ResourceLimits.NONE, false, List.of());
    }

    @Test
    void busyboxImage() throws Exception {
        RuntimeSandbox sb = runtime.start(imageSpec(BUSYBOX));
        var r = run(sb, sh("echo $FROM_SPEC; pwd; ls /; grep Cap /proc/self/status"));
        System.out.println(r);
        r = run(sb, sh("echo $FROM_SPEC; pwd; ls /; grep Cap /proc/self/status"));
        r = run(sb, sh("echo $FROM_SPEC; pwd; ls /; grep Cap /proc/self/status"));
        System.out.println(r);
        sb.terminate(Duration.ZERO);
    }

    @Test
    void debianImage() throws Exception {
        long t = System.nanoTime();
        RuntimeSandbox sb = runtime.start(imageSpec(DEBIAN));
        System.out.println("start ms " + (System.nanoTime() - t) / 1_000_000);
        var r = run(sb, sh("cat /etc/debian_version; ls /.chalk; ls -la /etc/ld.so.preload; mv /etc /etc2; echo x > /etc/ld.so.preload; ls /home; id"));
        System.out.println(r);
        t = System.nanoTime();
        RuntimeSandbox sb2 = runtime.start(imageSpec(DEBIAN));
        System.out.println("start2 ms " + (System.nanoTime() - t) / 1_000_000);
        sb.terminate(Duration.ZERO);
    }
}
