package ai.chalk.compute.server.runtime.local;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.host.NoFollowDelete;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The local runtimes of a test that runs in both isolation modes: {@code "bubblewrap"}, or {@code "unshare"} (a PATH
 * without bubblewrap stands for a host without it), each on a state directory of its own under {@code temp}, closed
 * after each test ({@code @RegisterExtension}). Either with {@link #HOST_IDS} runs sandboxes as on a kernel that cannot
 * give them ids of their own (before 6.3): their root is the host's root without capabilities.
 */
final class ModeRuntimes implements AfterEachCallback {

    /** A mode's suffix for a host that cannot give sandboxes ids of their own: sandbox root is host root. */
    static final String HOST_IDS = " as host root";

    private final Path temp;
    private final List<LocalRuntime> runtimes = new ArrayList<>();

    ModeRuntimes() {
        try {
            this.temp = Files.createTempDirectory("chalk-mode-runtimes");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A directory of the test's own, removed with the runtimes. */
    Path temp() {
        return temp;
    }

    /** A runtime that isolates sandboxes in {@code mode}, with {@code defaults}. */
    LocalRuntime start(String mode, SandboxDefaults defaults) {
        return start(mode, b -> b.defaults(defaults));
    }

    /** A runtime that isolates sandboxes in {@code mode}, with the {@code settings} of a test. */
    LocalRuntime start(String mode, UnaryOperator<LocalRuntime.Builder> settings) {
        LocalRuntime.Builder b = settings.apply(
                LocalRuntime.builder(temp.resolve("state-" + runtimes.size())).isolation(LocalIsolation.REQUIRED));
        boolean hostIds = mode.endsWith(HOST_IDS);
        String tool = mode.replace(HOST_IDS, "");
        b.userNamespaces(!hostIds);
        if (tool.equals("unshare")) {
            b.toolPath(LocalTesting.pathWithout(temp.resolve("path-" + runtimes.size()), "bwrap"));
        }
        LocalRuntime r = b.build();
        runtimes.add(r);
        assertThat(r.isolation().level()).isEqualTo(tool);
        if (hostIds) { // the others are the host's mode, which is this one too on a kernel before 6.3
            LocalHostRootBehaviourTest.checked(r);
        }
        return r;
    }

    LocalRuntime start(String mode) {
        return start(mode, SandboxDefaults.STANDARD);
    }

    @Override
    public void afterEach(ExtensionContext context) throws IOException {
        runtimes.forEach(LocalRuntime::close);
        runtimes.clear();
        NoFollowDelete.delete(temp);
    }
}
