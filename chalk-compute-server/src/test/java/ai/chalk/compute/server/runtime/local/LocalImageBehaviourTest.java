package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.RuntimeBehaviourTest;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.SandboxRuntime;
import ai.chalk.compute.server.runtime.host.NoFollowDelete;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;

/**
 * The shared runtime behaviour on local sandboxes whose root is the Debian test image (bubblewrap, the image's
 * dash and coreutils, the runtime's helpers from /.chalk). The image is unpacked once; each test's runtime gets
 * the unpacked tree hard-linked into its own cache.
 */
class LocalImageBehaviourTest extends RuntimeBehaviourTest {

    private static Path shared;

    @Override
    protected SandboxRuntime createRuntime(Path state) {
        try {
            Path rootfs = sharedCache().resolve("images/rootfs");
            Files.createDirectories(state.resolve("images"));
            LocalTesting.runOrFail(
                    "cp",
                    "-al",
                    rootfs.toString(),
                    state.resolve("images/rootfs").toString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return settings(LocalRuntime.builder(state).defaultImage(LocalImageSandboxTest.DEBIAN))
                .build();
    }

    /** The runtime's settings beyond the image: none here. */
    LocalRuntime.Builder settings(LocalRuntime.Builder builder) {
        return builder;
    }

    @Override
    protected Path writableLayer(RuntimeSandbox sandbox) {
        return ((LocalSandbox) sandbox).layer();
    }

    private static synchronized Path sharedCache() throws IOException {
        if (shared == null) {
            ai.chalk.compute.server.runtime.docker.DockerTesting.debianImage(); // built as CI does when missing
            Path dir = Files.createTempDirectory("chalk-debian-cache");
            try (LocalRuntime r = LocalRuntime.builder(dir).build()) {
                r.image(LocalImageSandboxTest.DEBIAN);
            } catch (ai.chalk.compute.server.runtime.RuntimeStartException e) {
                throw new IOException(e.getMessage(), e);
            }
            shared = dir;
        }
        return shared;
    }

    @AfterAll
    static void removeSharedCache() throws IOException {
        if (shared != null) {
            NoFollowDelete.delete(shared);
            shared = null;
        }
    }
}
