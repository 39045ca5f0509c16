package ai.chalk.compute.server.runtime.local;

import static ai.chalk.compute.server.runtime.local.LocalTesting.sh;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Sandboxes start while the host's {@code /etc} changes under them, as it does while a package manager or an admin
 * works: a root-only file is masked in every sandbox started after it was made, and one removed between the walk of
 * {@code /etc} and the mount of its mask failed the whole create ("mount point does not exist" in CI110). Alone: it
 * writes in the host's {@code /etc}, which every sandbox started meanwhile sees.
 */
@Tag("alone")
class EtcChangesDuringStartTest {

    @RegisterExtension
    final ModeRuntimes runtimes = new ModeRuntimes();

    /**
     * A root-only file that lives 60 ms out of every 160: without starting again on a changed view, about one create
     * in ten failed here.
     */
    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare"})
    void sandboxesStartWhileRootOnlyFilesComeAndGoUnderEtc(String mode) throws Exception {
        LocalRuntime runtime = runtimes.start(mode);
        Path secret = Path.of(
                "/etc/chalk-compute-test-churn-" + ProcessHandle.current().pid());
        AtomicBoolean stop = new AtomicBoolean();
        Thread churn = new Thread(() -> {
            try {
                while (!stop.get()) {
                    Files.writeString(secret, "root only");
                    Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("rw-------"));
                    Thread.sleep(60);
                    Files.delete(secret);
                    Thread.sleep(100);
                }
            } catch (IOException | InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        churn.start();
        try {
            for (int i = 0; i < 60; i++) {
                var sandbox = runtime.start(LocalTesting.spec());
                assertThat(sh(sandbox, "echo started").ok().out()).isEqualTo("started\n");
                sandbox.terminate(Duration.ZERO);
            }
            assertThat(churn.isAlive()).as("the churn kept going").isTrue();
        } finally {
            stop.set(true);
            churn.join();
            Files.deleteIfExists(secret);
        }
    }
}
