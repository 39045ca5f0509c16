package ai.chalk.compute.server.runtime.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.RuntimeTesting;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.SocketTimeoutException;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A tenant names an image on a "registry" of the server's own host: the engine pulls from the host's network, where no
 * rule of the sandboxes' applies, and in plain HTTP from loopback, so {@code 127.0.0.1:PORT/x} made it fetch from the
 * host's services, and its answer (refused, or an HTTP status) mapped which ports listen. Such images are refused
 * before the engine is asked: both runtimes pull through {@link ImagePull}.
 */
class RegistryOnTheHostSecurityTest extends DockerTesting.WithRuntime {

    @Test
    void anImageOnARegistryOfTheHostIsRefusedAndTheEngineNeverConnects() throws Exception {
        try (ServerSocket listening = new ServerSocket(0, 10, InetAddress.getLoopbackAddress())) {
            listening.setSoTimeout(1_000);
            String image = "127.0.0.1:" + listening.getLocalPort() + "/probe:latest";
            SandboxSpec spec = new SandboxSpec(
                    RuntimeTesting.newId(), image, Map.of(), "/", ResourceLimits.NONE, false, List.of());
            assertThatThrownBy(() -> runtime.start(spec))
                    .isInstanceOf(RuntimeStartException.class)
                    .hasMessageContaining(
                            "which is this server's host or its link-local network (127.0.0.1); images are"
                                    + " not pulled from there");
            assertThatThrownBy(listening::accept)
                    .as("the engine never connected")
                    .isInstanceOf(SocketTimeoutException.class);
        }
    }

    @Test
    void registriesOnLoopbackLinkLocalOrThisHostAreRefusedOthersAreLeftToTheEngine() throws Exception {
        for (String image : List.of(
                "localhost/x",
                "localhost:5000/x:1",
                "127.0.0.2:80/x",
                "[::1]:5000/x",
                "169.254.169.254/latest/x",
                InetAddress.getLocalHost().getHostAddress() + ":5000/x")) {
            assertThat(ImagePull.refusedRegistry(image)).as(image).isPresent();
        }
        for (String image : List.of(
                "busybox", "library/busybox:1.36", "docker.io/library/busybox", "registry.example.invalid/team/app")) {
            assertThat(ImagePull.refusedRegistry(image)).as(image).isEmpty();
        }
    }
}
