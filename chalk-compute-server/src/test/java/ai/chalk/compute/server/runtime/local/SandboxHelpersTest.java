package ai.chalk.compute.server.runtime.local;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.host.HostTools;
import ai.chalk.compute.server.runtime.host.SandboxTools;
import java.nio.file.Path;
import java.util.List;
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
    }
}
