package ai.chalk.compute.server.runtime.local;

import static ai.chalk.compute.server.runtime.local.LocalTesting.sh;
import static ai.chalk.compute.server.runtime.local.LocalTesting.spec;
import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.RuntimeSandbox;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Without a freezer a snapshot copies a layer while the sandbox runs: a sandbox that swaps a directory of its layer
 * with a link to a host directory ({@code renameat2(RENAME_EXCHANGE)} in a tight loop) must not get host files
 * copied into its snapshot, which it could then read in a sandbox started from it.
 */
class SnapshotCopySecurityTest {

    private static final String SECRET = "host secret: must never reach a snapshot";

    @TempDir
    Path state;

    @TempDir
    Path host;

    @TempDir
    Path snapshots;

    @Test
    void aSandboxSwappingLinksIntoItsLayerDuringALiveSnapshotGetsNoHostFileCopied() throws Exception {
        Files.writeString(host.resolve("canary.txt"), SECRET);
        Files.createDirectories(host.resolve("sub"));
        Files.writeString(host.resolve("sub/canary.txt"), SECRET);
        // cgroups off: no freezer, so the copy runs while the sandbox's processes do
        try (LocalRuntime runtime = new LocalRuntime(state, LocalIsolation.AUTO, LocalRuntime.DEFAULT_PATH, false)) {
            RuntimeSandbox sb = runtime.start(spec());
            sh(
                            sb,
                            "set -e; cd /workspace; mkdir -p d/sub; echo layer-copy > d/canary.txt;"
                                    + " echo layer-copy > d/sub/canary.txt; ln -s " + host + " l")
                    .ok();
            String perl = "use Config; my $nr = $Config{archname} =~ /aarch64/ ? 276 : 316;"
                    + " my ($d, $l) = (q{/workspace/d}, q{/workspace/l}); my $end = time() + 20;"
                    + " while (time() < $end) { syscall($nr, -100, $d, -100, $l, 2) == 0 or die \"renameat2: $!\" }";
            sh(sb, "setsid perl -e '" + perl + "' > /dev/null 2>&1 < /dev/null &")
                    .ok();
            Thread.sleep(300);

            List<String> leaked = new ArrayList<>();
            int copies = 0;
            long end = System.nanoTime() + 6_000_000_000L;
            while (System.nanoTime() < end) {
                Path copy = snapshots.resolve("s" + copies++);
                RuntimeSandbox.SnapshotResult result = sb.snapshot(copy);
                assertThat(result.frozen()).isFalse();
                try (Stream<Path> files = Files.walk(copy)) { // (walk follows no link)
                    for (Path f : files.filter(f -> Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS))
                            .toList()) {
                        if (Files.readString(f).contains("host secret")) {
                            leaked.add(copy.relativize(f).toString());
                        }
                    }
                }
            }
            System.out.printf("live snapshots under a swap race: %d copies%n", copies);
            assertThat(copies).isGreaterThan(5);
            assertThat(leaked).as("host files copied into snapshots").isEmpty();
            sb.terminate(java.time.Duration.ZERO);
        }
        assertThat(host.resolve("canary.txt")).hasContent(SECRET);
    }
}
