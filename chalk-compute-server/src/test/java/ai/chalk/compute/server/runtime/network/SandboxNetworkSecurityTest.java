package ai.chalk.compute.server.runtime.network;

import static ai.chalk.compute.server.runtime.network.NetnsTesting.NOBODY;
import static ai.chalk.compute.server.runtime.network.NetnsTesting.ROOT_WITHOUT_CAPS;
import static ai.chalk.compute.server.runtime.network.NetnsTesting.connect;
import static ai.chalk.compute.server.runtime.network.NetnsTesting.inside;
import static ai.chalk.compute.server.runtime.network.NetnsTesting.run;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.network.NetnsTesting.Result;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A sandbox's own network namespace with slirp4netns egress, attacked from inside as sandbox code would (no
 * capabilities): the host's loopback, the host's addresses and cloud metadata stay out of reach and fail fast, the
 * rules cannot be removed, and a network the test builds to stand for the internet is reachable.
 */
class SandboxNetworkSecurityTest {

    @TempDir
    Path state;

    NetnsTesting netns;
    SandboxNetwork network;
    final List<Egress> egresses = new ArrayList<>();
    final List<ServerSocket> servers = new ArrayList<>();

    @BeforeEach
    void start() throws Exception {
        netns = new NetnsTesting();
        network = SandboxNetwork.onThisHost(ProcessBuilder::start);
    }

    @AfterEach
    void stop() throws Exception {
        egresses.forEach(Egress::close);
        for (ServerSocket s : servers) {
            s.close();
        }
        netns.close();
    }

    Egress attach(long pid) throws Exception {
        Egress e = network.attach(state, pid);
        egresses.add(e);
        return e;
    }

    /** A host service that accepts and says hello; bound where a server's API could be. */
    int hostService(String bindAddress) throws Exception {
        ServerSocket s = new ServerSocket();
        s.bind(new InetSocketAddress(InetAddress.getByName(bindAddress), 0));
        servers.add(s);
        Thread t = new Thread(() -> {
            while (!s.isClosed()) {
                try (Socket c = s.accept()) {
                    c.getOutputStream().write("hello from the host\n".getBytes(StandardCharsets.US_ASCII));
                } catch (Exception e) {
                    // closed
                }
            }
        });
        t.setDaemon(true);
        t.start();
        return s.getLocalPort();
    }

    static List<String> hostIpv4Addresses() throws Exception {
        List<String> all = new ArrayList<>();
        for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
            for (InetAddress a : Collections.list(nic.getInetAddresses())) {
                if (a instanceof Inet4Address && !a.isLoopbackAddress()) {
                    all.add(a.getHostAddress());
                }
            }
        }
        return all;
    }

    static void assertRefusedFast(Result r, String what) {
        assertThat(r.output()).as(what).doesNotContain("connected").doesNotContain("hello");
        assertThat(r.exitCode()).as(what + ": %s", r.output()).isNotZero();
        assertThat(r.millis())
                .as(what + " must be refused, not dropped into a timeout")
                .isLessThan(2000);
    }

    @Test
    void theHostsLoopbackIsNotReachableThroughTheGatewayNorAsTheSandboxsOwnLoopback() throws Exception {
        int port = hostService("127.0.0.1");
        assertThat(connectFromHost("127.0.0.1", port)).isTrue();
        long pid = netns.namespace().pid();
        attach(pid);

        assertRefusedFast(connect(pid, SandboxNetwork.GATEWAY, port), "the gateway, which slirp maps to host loopback");
        assertRefusedFast(connect(pid, "127.0.0.1", port), "127.0.0.1, which is the sandbox's own loopback");
        assertRefusedFast(connect(pid, "127.0.0.2", port), "127.0.0.2");
    }

    @Test
    void aHostServiceOnEveryAddressIsNotReachableThroughAnyAddressOfTheHost() throws Exception {
        int port = hostService("0.0.0.0");
        List<String> addresses = hostIpv4Addresses();
        assertThat(addresses).as("the host has a non-loopback address to try").isNotEmpty();
        for (String a : addresses) {
            assertThat(connectFromHost(a, port))
                    .as("from the host, %s answers", a)
                    .isTrue();
        }
        long pid = netns.namespace().pid();
        attach(pid);

        for (String a : addresses) {
            assertRefusedFast(connect(pid, a, port), "the host's address " + a);
        }
    }

    @Test
    void aHostServiceIsNotReachableThroughAddressesTheHostTakesByALocalRoute() throws Exception {
        // AnyIP: a `local` route makes the host answer a whole prefix that no interface lists as its address
        String prefix = "198.51.100." + (ThreadLocalRandom.current().nextInt(0, 32) * 8) + "/29";
        String address = prefix.substring(0, prefix.lastIndexOf('.') + 1)
                + (Integer.parseInt(prefix.substring(prefix.lastIndexOf('.') + 1, prefix.indexOf('/'))) + 5);
        NetnsTesting.ok(List.of("ip", "route", "add", "local", prefix, "dev", "lo"));
        try {
            int port = hostService("0.0.0.0");
            assertThat(connectFromHost(address, port))
                    .as("from the host, %s answers", address)
                    .isTrue();
            long pid = netns.namespace().pid();
            attach(pid);

            assertRefusedFast(connect(pid, address, port), "an address of the host's local route " + prefix);
        } finally {
            NetnsTesting.ok(List.of("ip", "route", "del", "local", prefix, "dev", "lo"));
        }
    }

    @Test
    void cloudMetadataIsRejectedAtOnceNotDropped() throws Exception {
        long pid = netns.namespace().pid();
        attach(pid);

        assertRefusedFast(connect(pid, "169.254.169.254", 80), "AWS/GCP/Azure metadata");
        assertRefusedFast(connect(pid, "169.254.170.2", 80), "ECS task metadata");
        assertRefusedFast(connect(pid, "100.100.100.200", 80), "Alibaba metadata");
        Result udp = inside(pid, NOBODY, "bash", "-c", "echo x >/dev/udp/169.254.169.254/53 && echo sent");
        assertThat(udp.output()).as("a UDP datagram to metadata").doesNotContain("sent");
    }

    @Test
    void sandboxCodeCannotRemoveTheRulesNorChangeTheRoutes() throws Exception {
        long pid = netns.namespace().pid();
        attach(pid);

        for (List<String> as : List.of(NOBODY, ROOT_WITHOUT_CAPS)) {
            Result flush = inside(pid, as, "nft", "flush", "ruleset");
            assertThat(flush.exitCode())
                    .as("nft flush ruleset as %s: %s", as, flush.output())
                    .isNotZero();
            Result delete = inside(pid, as, "nft", "delete", "table", "inet", EgressRules.TABLE);
            assertThat(delete.exitCode())
                    .as("nft delete table: %s", delete.output())
                    .isNotZero();
            Result route =
                    inside(pid, as, "ip", "route", "replace", "169.254.169.254/32", "dev", SandboxNetwork.INTERFACE);
            assertThat(route.exitCode())
                    .as("ip route replace: %s", route.output())
                    .isNotZero();
            Result address = inside(pid, as, "ip", "addr", "add", "192.0.2.77/32", "dev", "lo");
            assertThat(address.exitCode())
                    .as("ip addr add: %s", address.output())
                    .isNotZero();
        }
        Result rules = inside(pid, List.of(), "nft", "list", "table", "inet", EgressRules.TABLE);
        assertThat(rules.output()).contains("hook output").contains("reject with tcp reset");
        assertRefusedFast(connect(pid, "169.254.169.254", 80), "metadata after the attempts");
    }

    @Test
    void aNamespaceOwnedByTheSandboxsUserNamespaceIsFirewalledAlikeAndItsRootWithoutCapabilitiesCannotUndoIt()
            throws Exception {
        int port = hostService("0.0.0.0");
        long pid = netns.namespaceInOwnUserNamespace().pid();
        attach(pid);

        Result flush = run(List.of(
                "nsenter",
                "--target",
                Long.toString(pid),
                "--user",
                "--net",
                "--",
                "setpriv",
                "--bounding-set=-all",
                "--inh-caps=-all",
                "--no-new-privs",
                "--",
                "nft",
                "flush",
                "ruleset"));
        assertThat(flush.exitCode())
                .as("nft flush ruleset as the sandbox's root: %s", flush.output())
                .isNotZero();
        assertRefusedFast(connect(pid, "169.254.169.254", 80), "metadata");
        for (String a : hostIpv4Addresses()) {
            assertRefusedFast(connect(pid, a, port), "the host's address " + a);
        }
    }

    @Test
    void theNamespaceHasAnInterfaceADefaultRouteAndDnsOnlyToSlirpsResolver() throws Exception {
        long pid = netns.namespace().pid();
        attach(pid);

        Result link = inside(pid, NOBODY, "ip", "-o", "addr", "show", "dev", SandboxNetwork.INTERFACE);
        assertThat(link.output()).contains(SandboxNetwork.ADDRESS + "/24");
        Result up = inside(pid, NOBODY, "ip", "-o", "link", "show", "dev", SandboxNetwork.INTERFACE);
        assertThat(up.output()).contains("UP").contains("mtu " + SandboxNetwork.MTU);
        Result route = inside(pid, NOBODY, "ip", "route", "show", "default");
        assertThat(route.output())
                .contains("default via " + SandboxNetwork.GATEWAY + " dev " + SandboxNetwork.INTERFACE);
        Result rules = inside(pid, List.of(), "nft", "list", "table", "inet", EgressRules.TABLE);
        assertThat(rules.output()).contains("ip daddr " + SandboxNetwork.RESOLVER + " udp dport 53 accept");
        assertThat(SandboxNetwork.resolvConf()).isEqualTo("nameserver 10.0.2.3\n");
        assertRefusedFast(connect(pid, SandboxNetwork.RESOLVER, 80), "slirp's resolver on another port than 53");
    }

    @Test
    void aNetworkBeyondTheHostIsReachableWhileTheHostsEndOfTheLinkIsNot() throws Exception {
        NetnsTesting.Internet internet = netns.internet();
        int hostPort = hostService("0.0.0.0");
        long pid = netns.namespace().pid();
        attach(pid);

        Result out = connect(pid, internet.farEnd(), internet.port());
        assertThat(out.output())
                .as("exit %s", out.exitCode())
                .contains("connected")
                .contains("hello from the internet");
        assertRefusedFast(connect(pid, internet.hostEnd(), hostPort), "the host's end of the link");
    }

    @Test
    void slirpEndsWhenTheHandleClosesAndWhenTheSandboxsProcessDies() throws Exception {
        long first = netns.namespace().pid();
        Egress closed = attach(first);
        assertThat(closed.isAlive()).isTrue();
        closed.close();
        assertThat(ProcessHandle.of(closed.slirpPid())
                        .map(ProcessHandle::isAlive)
                        .orElse(false))
                .isFalse();

        long init = netns.bubblewrapSandbox(); // not a child of the server: its end is noticed by polling
        Egress orphaned = attach(init);
        assertThat(orphaned.isAlive()).isTrue();
        assertThat(connect(init, "169.254.169.254", 80).output()).contains("refused");
        ProcessHandle.of(init).orElseThrow().destroyForcibly();
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> !orphaned.isAlive());
    }

    @Test
    void slirpEndsWhenTheServerIsKilled() throws Exception {
        long init = netns.bubblewrapSandbox();
        Process server = netns.start(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp",
                System.getProperty("java.class.path"),
                ServerStandIn.class.getName(),
                state.toString(),
                Long.toString(init)));
        String line =
                new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8)).readLine();
        assertThat(line).as("the stand-in attached").matches("\\d+");
        ProcessHandle slirp = ProcessHandle.of(Long.parseLong(line)).orElseThrow();
        assertThat(connect(init, "169.254.169.254", 80).output()).contains("refused");

        server.destroyForcibly(); // SIGKILL: no shutdown hook runs
        Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> !slirp.isAlive());
    }

    @Test
    void theServersOwnNamespaceIsNeverAttached() throws Exception {
        assertThatThrownBy(() -> network.attach(state, ProcessHandle.current().pid()))
                .hasMessageContaining("shares the server's network namespace");
        Result table = run(List.of("nft", "list", "table", "inet", EgressRules.TABLE));
        assertThat(table.exitCode())
                .as("no egress table on the host: %s", table.output())
                .isNotZero();
        assertThatThrownBy(() -> network.attach(state, Long.MAX_VALUE / 2)).hasMessageContaining("is gone");
    }

    @Test
    void missingToolsSayWhatToInstall(@TempDir Path empty) {
        assertThatThrownBy(() -> EgressTools.find(empty.toString()))
                .isInstanceOf(RuntimeStartException.class)
                .hasMessageContaining("slirp4netns")
                .hasMessageContaining("install slirp4netns and nftables")
                .hasMessageContaining("or create the sandbox without network");
    }

    @Test
    void attachingTakesWellUnderHalfASecond() throws Exception {
        List<Long> millis = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            long pid = netns.namespace().pid();
            long t0 = System.nanoTime();
            attach(pid);
            millis.add((System.nanoTime() - t0) / 1_000_000);
        }
        Collections.sort(millis);
        System.out.printf(
                "SandboxNetwork.attach: median %d ms, max %d ms over %d attaches%n",
                millis.get(5), millis.get(9), millis.size());
        assertThat(millis.get(5)).isLessThan(500);
        assertThat(Files.exists(state.resolve("slirp4netns.log"))).isTrue();
    }

    static boolean connectFromHost(String host, int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(host, port), 2000);
            return true;
        } catch (Exception e) {
            return false;
        }
    }
}
