package ai.chalk.compute.server.runtime.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.chalk.compute.server.runtime.userns.UserNamespace;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A runtime owns the thread that works as its sandboxes' root on the host ({@code chalk-sandbox-root}): two runtimes
 * in one JVM each have their own, and a closed runtime leaves none behind.
 */
class LocalRuntimeThreadsTest {

    /** The thread {@code runtime}'s sandboxes' root work runs on. */
    private static Thread sandboxRootThread(LocalRuntime runtime) throws Exception {
        Optional<UserNamespace> userns = runtime.newUserNamespace();
        assumeTrue(userns.isPresent(), "sandboxes get no user namespace of their own on this host");
        try (UserNamespace ns = userns.get()) {
            Thread thread = ns.asRoot(Thread::currentThread);
            runtime.releaseIds(ns.range());
            return thread;
        }
    }

    @Test
    void aClosedRuntimeLeavesNoSandboxRootThreadBehind(@TempDir Path state) throws Exception {
        Thread root;
        try (LocalRuntime runtime = LocalRuntime.builder(state).build()) {
            root = sandboxRootThread(runtime);
            assertThat(root.getName()).isEqualTo("chalk-sandbox-root");
            assertThat(Thread.getAllStackTraces()).containsKey(root);
        }
        root.join(Duration.ofSeconds(1).toMillis()); // close waited for it to finish its work; it is ending
        assertThat(root.isAlive()).isFalse();
        assertThat(Thread.getAllStackTraces()).doesNotContainKey(root);
    }

    @Test
    void twoRuntimesEachOwnTheirSandboxRootThread(@TempDir Path one, @TempDir Path two) throws Exception {
        try (LocalRuntime first = LocalRuntime.builder(one).build()) {
            Thread firstRoot;
            try (LocalRuntime second = LocalRuntime.builder(two).build()) {
                firstRoot = sandboxRootThread(first);
                Thread secondRoot = sandboxRootThread(second);
                assertThat(secondRoot).isNotSameAs(firstRoot);
                second.close();
                secondRoot.join(Duration.ofSeconds(1).toMillis());
                assertThat(Thread.getAllStackTraces()).doesNotContainKey(secondRoot);
            }
            // the runtime still open keeps its own
            assertThat(sandboxRootThread(first)).isSameAs(firstRoot);
            assertThat(firstRoot.isAlive()).isTrue();
        }
    }
}
