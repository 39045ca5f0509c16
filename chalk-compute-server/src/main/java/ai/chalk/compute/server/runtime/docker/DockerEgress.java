package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.egress.EgressEndpoint;
import ai.chalk.compute.server.egress.EgressOptions;
import ai.chalk.compute.server.egress.EgressPolicy;
import ai.chalk.compute.server.egress.EgressProxy;
import ai.chalk.compute.server.egress.SandboxTrust;
import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.network.ProxyLinks;
import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.exception.DockerException;
import com.github.dockerjava.api.model.AccessMode;
import com.github.dockerjava.api.model.Bind;
import com.github.dockerjava.api.model.Network;
import com.github.dockerjava.api.model.Volume;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The way out of a Docker sandbox with a network policy: an internal bridge network of its own (a /30 of
 * {@link ProxyLinks#POOL}, bridge {@code chxd<n>}: the engine forwards nothing from it), whose only other member is
 * the host at the gateway address, where the server's {@link EgressProxy} listens for this sandbox. The host's rules
 * for {@code chx*} interfaces ({@link ProxyLinks}) let nothing else through to the host and forward nothing; the
 * container's own namespace gets the sandbox-side rules too (only the proxy's ports), and its {@code /etc/resolv.conf}
 * names the proxy's resolver. The proxy on the gateway rather than a proxy container: the proxy holds the policy's
 * secrets, which then never enter anything the engine runs, and the sandbox is told apart by the address it reached.
 * This needs the engine on the server's host (the gateway is a host address) and the server as root.
 */
final class DockerEgress {

    private static final Logger log = LoggerFactory.getLogger(DockerEgress.class);

    /** Label on a sandbox's egress network and container: the network's name. */
    static final String LABEL_EGRESS = "ai.chalk.compute.egress";

    /**
     * What a sandbox's container needs.
     *
     * @param network the network it joins
     * @param binds   the trust bundle and the resolver configuration, read-only
     * @param proxy   the proxy's address, the gateway
     */
    record Prepared(String network, List<Bind> binds, InetAddress proxy) {}

    private record Attached(String network, EgressEndpoint endpoint, Path dir) {}

    private final DockerClient client;
    private final Path dir;
    private final EgressOptions options;
    private final boolean engineHere;
    private final String serverKey;
    private final Map<String, Attached> bySandbox = new ConcurrentHashMap<>();
    private EgressProxy proxy; // guarded by this
    private ProxyLinks links; // guarded by this

    DockerEgress(DockerClient client, Path dir, EgressOptions options, boolean engineHere, String serverKey) {
        this.client = client;
        this.dir = dir;
        this.options = options;
        this.engineHere = engineHere;
        this.serverKey = serverKey;
    }

    private synchronized void ready() throws RuntimeStartException {
        if (!engineHere) {
            throw new RuntimeStartException("a sandbox with a network policy reaches only the server's egress proxy,"
                    + " on its network's gateway, which must be an address of the server's host: this Docker engine"
                    + " runs elsewhere (or is reached over TCP); use the local runtime or an engine on this host");
        }
        if (proxy != null) {
            return;
        }
        links = ProxyLinks.onThisHost(
                new int[] {EgressProxy.PROXY_PORT, EgressProxy.HTTP_PORT, EgressProxy.HTTPS_PORT},
                EgressProxy.DNS_PORT);
        try {
            proxy = EgressProxy.start(dir, options, List.of(ProxyLinks.POOL));
        } catch (IOException e) {
            throw new RuntimeStartException("cannot start the egress proxy: " + e.getMessage(), e);
        }
    }

    /**
     * Creates the sandbox's network and serves it there; the container then joins it with {@link Prepared#binds}.
     * Undone by {@link #release}.
     */
    Prepared prepare(String sandboxId, EgressPolicy policy) throws RuntimeStartException {
        ready();
        String name = "chalk-egress-" + sandboxId;
        int start = ThreadLocalRandom.current().nextInt(ProxyLinks.DOCKER_SLOTS);
        String lastFailure = "";
        for (int i = 0; i < 32; i++) {
            int slot = ProxyLinks.DOCKER_FIRST_SLOT + (start + i * 7919) % ProxyLinks.DOCKER_SLOTS;
            InetAddress gateway = ProxyLinks.address(slot, 1);
            InetAddress subnet = ProxyLinks.address(slot, 0);
            try {
                client.createNetworkCmd()
                        .withName(name)
                        .withDriver("bridge")
                        .withInternal(true)
                        .withCheckDuplicate(true)
                        .withIpam(new Network.Ipam()
                                .withConfig(new Network.Ipam.Config()
                                        .withSubnet(subnet.getHostAddress() + "/30")
                                        .withGateway(gateway.getHostAddress())))
                        .withOptions(Map.of(
                                "com.docker.network.bridge.name",
                                ProxyLinks.PREFIX + "d" + slot,
                                "com.docker.network.bridge.enable_icc",
                                "false",
                                "com.docker.network.bridge.enable_ip_masquerade",
                                "false"))
                        .withLabels(Map.of(LABEL_EGRESS, name, DockerRuntime.LABEL_SERVER, serverKey))
                        .exec();
            } catch (DockerException e) {
                lastFailure = DockerEngine.engineMessage(e);
                removeNetwork(name); // half made
                continue; // the subnet is another network's: the next one
            }
            Path own = dir.resolve("sandboxes").resolve(sandboxId);
            try {
                Files.createDirectories(own);
                Path resolv = own.resolve("resolv.conf");
                Files.writeString(resolv, "nameserver " + gateway.getHostAddress() + "\noptions attempts:2\n");
                Files.setPosixFilePermissions(resolv, PosixFilePermissions.fromString("rw-r--r--"));
                EgressEndpoint endpoint;
                synchronized (this) {
                    endpoint = proxy.open(sandboxId, gateway, policy);
                }
                bySandbox.put(sandboxId, new Attached(name, endpoint, own));
                return new Prepared(
                        name,
                        List.of(
                                new Bind(proxy.trustDir().toString(), new Volume(SandboxTrust.MOUNT), AccessMode.ro),
                                new Bind(resolv.toString(), new Volume("/etc/resolv.conf"), AccessMode.ro)),
                        gateway);
            } catch (IOException e) {
                removeNetwork(name);
                throw new RuntimeStartException("cannot serve the sandbox's network: " + e.getMessage(), e);
            }
        }
        throw new RuntimeStartException("no free network for the sandbox in " + ProxyLinks.POOL + ": " + lastFailure);
    }

    /** Puts the sandbox-side rules into the running container's namespace (host process {@code pid}). */
    void fence(long pid, InetAddress proxyAddress) throws RuntimeStartException {
        try {
            ProxyLinks l;
            synchronized (this) {
                l = links;
            }
            l.fence(pid, proxyAddress);
        } catch (IOException e) {
            throw new RuntimeStartException("cannot fence the sandbox's network: " + e.getMessage(), e);
        }
    }

    /** Stops serving the sandbox and removes its network (after its container is gone); idempotent. */
    void release(String sandboxId) {
        Attached a = bySandbox.remove(sandboxId);
        if (a == null) {
            return;
        }
        a.endpoint().close();
        removeNetwork(a.network());
        try (var files = Files.walk(a.dir())) {
            files.sorted(java.util.Comparator.reverseOrder())
                    .forEach(f -> f.toFile().delete());
        } catch (IOException e) {
            // a small file left in the state directory
        }
    }

    /** Removes this server's egress networks of sandboxes it does not serve (a restart's leftovers). */
    void removeLeftovers() {
        try {
            Set<String> served = Set.copyOf(
                    bySandbox.values().stream().map(Attached::network).toList());
            for (Network n : client.listNetworksCmd()
                    .withFilter("label", List.of(LABEL_EGRESS, DockerRuntime.LABEL_SERVER + "=" + serverKey))
                    .exec()) {
                if (!served.contains(n.getName())) {
                    removeNetwork(n.getName());
                }
            }
        } catch (DockerException e) {
            log.warn("Cannot list the egress networks of this server: {}", DockerEngine.engineMessage(e));
        }
    }

    private void removeNetwork(String name) {
        try {
            client.removeNetworkCmd(name).exec();
        } catch (DockerException e) {
            // not there (never made, or gone)
        }
    }

    /** Stops serving without removing anything, as a crashed server would; for tests of a restart. */
    synchronized void abandon() {
        if (proxy != null) {
            proxy.close();
        }
    }

    synchronized void close() {
        bySandbox.keySet().forEach(this::release);
        if (proxy != null) {
            proxy.close();
        }
    }
}
