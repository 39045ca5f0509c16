package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.RuntimeBehaviourTest;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.SandboxRuntime;
import java.nio.file.Path;

/** The shared runtime behaviour on the local runtime (bubblewrap where installed). */
class LocalRuntimeBehaviourTest extends RuntimeBehaviourTest {

    @Override
    protected SandboxRuntime createRuntime(Path state) {
        return new LocalRuntime(state, LocalIsolation.AUTO);
    }

    @Override
    protected Path writableLayer(RuntimeSandbox sandbox) {
        return ((LocalSandbox) sandbox).layer();
    }
}
