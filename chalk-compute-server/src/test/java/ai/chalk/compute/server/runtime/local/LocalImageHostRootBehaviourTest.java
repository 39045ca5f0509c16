package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.SandboxRuntime;
import java.nio.file.Path;

/**
 * The shared runtime behaviour on local sandboxes of the Debian test image, as on a kernel that cannot give a sandbox
 * ids of its own: the image's layers and the sandbox's layer without id-mapped mounts, its root the host's root
 * without capabilities.
 */
class LocalImageHostRootBehaviourTest extends LocalImageBehaviourTest {

    @Override
    protected SandboxRuntime createRuntime(Path state) {
        return LocalHostRootBehaviourTest.checked((LocalRuntime) super.createRuntime(state));
    }

    @Override
    LocalRuntime.Builder settings(LocalRuntime.Builder builder) {
        return builder.userNamespaces(false);
    }
}
