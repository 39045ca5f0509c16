package ai.chalk.compute.server.runtime.local;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.host.HostTools;
import ai.chalk.compute.server.runtime.host.SandboxTools;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The host's programs the runtime runs in a sandbox's root: perl never reads a file of the sandbox's before its script.
 */
class SandboxHelpersTest {

    @TempDir
    Path temp;

    /**
     * A perl built with {@code usesitecustomize} runs {@code sitecustomize.pl} from its site library, a path the sandbox
     * can write in its root, unless told not to ({@code -f}): on the host's view and in image sandboxes alike.
     */
    @Test
    void perlRunsNoSiteCustomizationOfTheSandboxs() {
        HostTools tools = HostTools.find(System.getenv("PATH"), List.of(Path.of("/usr"), Path.of("/bin")));
        SandboxCommands.Helpers host = SandboxCommands.Helpers.host(tools);
        assertThat(host.perl()).hasSize(2).endsWith("-f");
        assertThat(host.perl().get(0)).endsWith("/perl");
        SandboxCommands.Helpers image =
                SandboxCommands.Helpers.image(SandboxTools.prepare(temp.resolve("tools"), tools));
        assertThat(image.perl()).endsWith("-f").hasSizeGreaterThan(2);
        // and every command line that runs a perl script runs it so: the spare helpers, execs with and without a
        // terminal (the terminal's relay), on the host's view and on an image
        for (SandboxCommands.Helpers helpers : List.of(host, image)) {
            List<String> perl = new ArrayList<>(helpers.perl());
            perl.add("-e");
            List<List<String>> lines = List.of(
                    SandboxCommands.spare(tools, helpers, 4242, true, List.of("FILTER")),
                    SandboxCommands.nsenterExec(
                            tools, helpers, List.of("FILTER"), 4242, true, false, "/", Map.of(), "true", List.of()),
                    SandboxCommands.nsenterExec(
                            tools, helpers, List.of("FILTER"), 4242, false, true, "/", Map.of(), "true", List.of()));
            for (List<String> line : lines) {
                assertThat(Collections.indexOfSubList(line, perl))
                        .as(String.join(" ", line))
                        .isNotNegative();
                assertThat(line.stream().filter("-e"::equals).count())
                        .as("every -e in " + String.join(" ", line))
                        .isEqualTo(1);
            }
        }
    }
}
