package ai.chalk.compute.server.runtime.local;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.sandbox.v1.BuildStep;
import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.proto.sandbox.v1.RunCommandsStep;
import ai.chalk.compute.server.image.ImageBuilder;
import ai.chalk.compute.server.runtime.docker.DockerTesting;
import ai.chalk.compute.server.runtime.host.NoFollowDelete;
import ai.chalk.compute.server.runtime.network.NetnsTesting;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An image build step that probes the host from inside its build sandbox: the server's port on host loopback, a
 * host service on every address and cloud metadata are refused at once, while a network beyond the host (a namespace
 * the test builds to stand for the internet) answers, and names resolve through slirp's resolver.
 */
class LocalImageBuildNetworkSecurityTest {

    @TempDir
    Path temp;

    Path state;
    LocalRuntime runtime;
    ImageBuilder builder;
    NetnsTesting netns;
    final List<ServerSocket> servers = new ArrayList<>();

    @BeforeAll
    static void images() {
        DockerTesting.debianImage();
    }

    @BeforeEach
    void start() throws Exception {
        state = Files.createDirectories(temp.resolve("state"));
        runtime = new LocalRuntime(state, LocalIsolation.AUTO);
        builder = runtime.imageBuilder();
        netns = new NetnsTesting();
    }

    @AfterEach
    void stop() throws Exception {
        for (ServerSocket s : servers) {
            s.close();
        }
        netns.close();
        runtime.close();
        NoFollowDelete.delete(state);
    }

    int listen(String address) throws Exception {
        ServerSocket s = new ServerSocket();
        s.bind(new InetSocketAddress(InetAddress.getByName(address), 0));
        servers.add(s);
        return s.getLocalPort();
    }

    @Test
    void aBuildStepReachesTheInternetButNeitherTheHostNorCloudMetadata() throws Exception {
        NetnsTesting.Internet internet = netns.internet();
        int loopbackPort = listen("127.0.0.1");
        int everywherePort = listen("0.0.0.0");
        List<String> targets = new ArrayList<>(List.of(
                "10.0.2.2:" + loopbackPort,
                "10.0.2.2:" + everywherePort,
                "127.0.0.1:" + loopbackPort,
                "169.254.169.254:80",
                "100.100.100.200:80"));
        for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
            for (InetAddress a : Collections.list(nic.getInetAddresses())) {
                if (a instanceof Inet4Address && !a.isLoopbackAddress()) {
                    targets.add(a.getHostAddress() + ":" + everywherePort);
                }
            }
        }
        String probe = "cat /etc/resolv.conf; for t in " + String.join(" ", targets) + "; do"
                + " if timeout 5 bash -c 'exec 3<>/dev/tcp/${0%:*}/${0#*:}' $t 2>/dev/null;"
                + " then echo \"REACHED $t\"; else echo \"REFUSED $t rc=$?\"; fi; done;"
                + " timeout 5 bash -c 'exec 3<>/dev/tcp/$0/$1 && head -n1 <&3' " + internet.farEnd() + " "
                + internet.port();
        ImageSpec spec = ImageSpec.newBuilder()
                .setBaseImage(LocalImageSandboxTest.DEBIAN)
                .addSteps(BuildStep.newBuilder()
                        .setRunCommands(RunCommandsStep.newBuilder().addCommands(probe)))
                .build();
        List<String> log = Collections.synchronizedList(new ArrayList<>());
        builder.check(spec);
        builder.build(spec, "b".repeat(64), log::add);

        assertThat(log).contains("nameserver 10.0.2.3");
        assertThat(log).noneMatch(l -> l.startsWith("REACHED"));
        for (String t : targets) {
            assertThat(log)
                    .as("refused at once, not dropped into a timeout (rc=124)")
                    .contains("REFUSED " + t + " rc=1");
        }
        assertThat(log).contains("hello from the internet");
    }
}
