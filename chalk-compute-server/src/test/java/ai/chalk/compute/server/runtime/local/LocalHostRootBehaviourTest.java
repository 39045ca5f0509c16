package ai.chalk.compute.server.runtime.local;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.SandboxRuntime;
import java.nio.file.Path;

/**
 * The shared runtime behaviour on the local runtime as on a kernel that cannot give a sandbox ids of its own (before
 * 6.3): the sandbox's root is the host's root without capabilities.
 */
class LocalHostRootBehaviourTest extends LocalRuntimeBehaviourTest {

    @Override
    protected SandboxRuntime createRuntime(Path state) {
        return checked(LocalRuntime.builder(state)
                .isolation(LocalIsolation.REQUIRED)
                .userNamespaces(false)
                .build());
    }

    /** {@code runtime}, once it says that its sandboxes' root is the host's root. */
    static LocalRuntime checked(LocalRuntime runtime) {
        assertThat(runtime.isolation().detail()).contains("processes run as the host's root without capabilities");
        return runtime;
    }
}
