package ai.chalk.compute.server.runtime.local;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.host.HostTools;
import ai.chalk.compute.server.runtime.local.LocalRuntime.Level;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The isolation level is chosen once, for the server's life: a trial that fails for a moment must not leave the
 * server on a weaker level. The real tools cannot be made to fail for a moment on demand, so a script named
 * {@code bwrap}, first on the search path, stands in for bubblewrap and fails the first runs, as a real one meeting a
 * passing shortage would; the helpers and {@code unshare} are the host's.
 */
class IsolationProbeTest {

    @TempDir
    Path dir;

    /** A stand-in for bwrap that fails its first {@code failures} runs, counting them in {@code runs}. */
    private HostTools toolsWithBwrapFailing(int failures) throws Exception {
        Path bin = Files.createDirectories(dir.resolve("bin"));
        Path runs = dir.resolve("runs");
        Path script = bin.resolve("bwrap");
        Files.writeString(
                script,
                "#!/bin/sh\necho run >> " + runs + "\n"
                        + "if [ $(wc -l < " + runs + ") -le " + failures + " ]; then\n"
                        + "  echo 'bwrap: Creating new namespace failed: Resource temporarily unavailable' >&2\n"
                        + "  exit 1\nfi\nexit 0\n");
        Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwx------"));
        return HostTools.find(bin + ":" + HostTools.DEFAULT_PATH, List.of(Path.of("/usr"), Path.of("/bin")));
    }

    private long runs() throws Exception {
        return Files.readAllLines(dir.resolve("runs")).size();
    }

    @Test
    void aTrialThatFailsForAMomentStillChoosesBubblewrap() throws Exception {
        HostTools tools = toolsWithBwrapFailing(IsolationProbe.TRIALS - 1);
        List<String> failures = new ArrayList<>();
        assertThat(IsolationProbe.choose(tools, LocalIsolation.AUTO, failures)).isEqualTo(Level.BUBBLEWRAP);
        assertThat(failures).isEmpty();
        assertThat(runs()).isEqualTo(IsolationProbe.TRIALS);
    }

    @Test
    void aToolThatKeepsFailingIsGivenUpAfterItsTrialsWithWhatItSaid() throws Exception {
        HostTools tools = toolsWithBwrapFailing(Integer.MAX_VALUE);
        List<String> failures = new ArrayList<>();
        assertThat(IsolationProbe.choose(tools, LocalIsolation.AUTO, failures)).isNotEqualTo(Level.BUBBLEWRAP);
        assertThat(failures.get(0))
                .startsWith("bubblewrap: a trial sandbox failed: ")
                .contains("Resource temporarily");
        assertThat(runs()).isEqualTo(IsolationProbe.TRIALS);
    }
}
