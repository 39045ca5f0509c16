package ai.chalk.compute.server.runtime.local;

import static ai.chalk.compute.server.runtime.local.LocalTesting.sh;
import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.host.Sysctl;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The host's table of open files ({@code fs.file-max}) is shared by every process, and no sandbox may open a file
 * once it is full. On a host that keeps it below its maximum (this VM: 2,466,093, no systemd), one sandbox filled it
 * and every other sandbox stopped. The runtime raises it to its maximum, as systemd does, so that each sandbox's open
 * files are bounded by its memory limit instead. Here the table is first set to 100,000 files more than are open, and
 * a sandbox holds 192,000.
 */
@Tag("alone")
class HostFileTableSecurityTest {

    private static final Path FILE_MAX = Path.of("/proc/sys/fs/file-max");
    private static final Path FILE_NR = Path.of("/proc/sys/fs/file-nr");

    @RegisterExtension
    final ModeRuntimes runtimes = new ModeRuntimes();

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare", "bubblewrap as host root", "unshare as host root"})
    void oneSandboxCannotFillTheHostsTableOfOpenFiles(String mode) throws Exception {
        assertThat(Files.isWritable(FILE_MAX))
                .as("this test changes fs.file-max: it runs as root on the host, as the local runtime's tests do")
                .isTrue();
        String before = Long.toString(Sysctl.read(FILE_MAX).orElseThrow());
        long open = Long.parseLong(Files.readAllLines(FILE_NR).get(0).split("\\s+")[0]);
        // put back even if this JVM is stopped meanwhile: a host left with little room would fail everything after
        Thread restore = new Thread(() -> {
            try {
                Files.writeString(FILE_MAX, before);
            } catch (java.io.IOException e) {
                // the finally below tried too
            }
        });
        Runtime.getRuntime().addShutdownHook(restore);
        Files.writeString(FILE_MAX, Long.toString(open + 100_000));
        try {
            LocalRuntime runtime = runtimes.start(mode, new SandboxDefaults(256L << 20, 64L << 20, 1024, 16_384, 4));
            assertThat(Sysctl.read(FILE_MAX)).contains(Long.MAX_VALUE);
            RuntimeSandbox hoarder = runtime.start(LocalTesting.spec());
            String held = sh(
                            hoarder,
                            "for i in $(seq 1 12); do perl -e 'my @f; while (@f < 16000 && open(my $h, \"<\","
                                    + " \"/dev/null\")) { push @f, $h } print scalar(@f), \"\\n\"; close STDOUT;"
                                    + " sleep 60' > /tmp/held-$i 2>&1 < /dev/null & done; sleep 1;"
                                    + " while [ $(cat /tmp/held-* 2>/dev/null | wc -l) -lt 12 ]; do sleep 0.1; done;"
                                    + " cat /tmp/held-* | awk '{ n += $1 } END { print n }'")
                    .ok()
                    .out();
            assertThat(held).as("files the sandbox holds").isEqualTo("192000\n");
            RuntimeSandbox other = runtime.start(LocalTesting.spec());
            assertThat(sh(other, "cat /etc/hostname > /dev/null && echo opened")
                            .ok()
                            .out())
                    .as("another sandbox opens a file meanwhile")
                    .isEqualTo("opened\n");
        } finally {
            Files.writeString(FILE_MAX, before);
            Runtime.getRuntime().removeShutdownHook(restore);
        }
    }
}
