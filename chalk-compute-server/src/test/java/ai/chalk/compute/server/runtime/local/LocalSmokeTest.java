package ai.chalk.compute.server.runtime.local;

import static ai.chalk.compute.server.runtime.local.LocalTesting.sh;
import static ai.chalk.compute.server.runtime.local.LocalTesting.spec;
import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.RuntimeSandbox;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LocalSmokeTest {

    @Test
    void smoke(@TempDir Path state) throws Exception {
        try (LocalRuntime rt = new LocalRuntime(state, LocalIsolation.AUTO)) {
            System.out.println(rt.isolation());
            RuntimeSandbox sb = rt.start(spec());
            LocalTesting.Run r = sh(sb, "id; pwd; hostname; ps -ef; ls -la /; cat /proc/self/status | grep -E 'Cap|NSpid'; env");
            System.out.println(r);
            sb.terminate(Duration.ofSeconds(1));
            System.out.println(sb.onStopped().get());
        }
    }
}
