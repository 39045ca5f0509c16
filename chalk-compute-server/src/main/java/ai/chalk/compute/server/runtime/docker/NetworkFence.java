package ai.chalk.compute.server.runtime.docker;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.exception.ConflictException;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.model.Network;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The networks that sandboxes with network and image builds use, and the host firewall rules that keep them off the
 * host. Docker's default bridge lets containers reach each other and every host service bound to {@code 0.0.0.0}
 * (through the gateway, which is a host address); these networks do neither:
 *
 * <ul>
 *   <li>two bridge networks, {@value #SANDBOXES} for sandboxes and {@value #BUILDS} for build steps (so a build step,
 *       which keeps Docker's default capabilities, never shares a link with a sandbox), each with inter-container
 *       traffic off ({@code enable_icc=false}: the engine drops bridged traffic between its containers) and a fixed
 *       bridge name starting with {@value #INTERFACE_PREFIX}; shared by every server on the engine and never
 *       removed (they hold nothing of a tenant);</li>
 *   <li>{@link #RULES}: host firewall rules matching those bridges by name: nothing from them is delivered to the
 *       host itself ({@code INPUT}: the gateway, every host address, published ports through the userland proxy),
 *       nor forwarded to link-local addresses (cloud metadata, {@code 169.254.169.254}) or to anything reached
 *       through the host's port forwarding ({@code DOCKER-USER}, connections the engine address-translated). What
 *       is left is the internet (package mirrors) and the engine's own DNS inside each container.</li>
 * </ul>
 *
 * <p>The rules are host state: they need root on the engine's host and {@code iptables} (the same binary dockerd
 * uses). {@link #install()} applies the missing ones and is cheap when all are there (one {@code iptables -C} per
 * rule, about 30 ms in all, and nothing when it looked less than two seconds ago), so it runs before every start
 * of a sandbox with network and every build: a flushed firewall (dockerd restarted, an operator's
 * {@code iptables -F}) is repaired before anything uses these networks again. With an engine on another machine the
 * rules cannot be applied here; the runtime says so in its isolation description.
 */
final class NetworkFence {

    private static final Logger log = LoggerFactory.getLogger(NetworkFence.class);

    /** The network of sandboxes granted the network. */
    static final String SANDBOXES = "chalk-compute-sandboxes";
    /** The network of image build steps. */
    static final String BUILDS = "chalk-compute-builds";
    /** Every bridge of these networks starts with this; the firewall rules match it ({@code chalkd-+}). */
    static final String INTERFACE_PREFIX = "chalkd-";
    /** Label marking the networks as this project's. */
    static final String LABEL_NETWORK = "ai.chalk.compute.network";

    /**
     * One firewall rule: the table, chain, and match with its verdict, as {@code iptables} takes them; why it is
     * there; and whether it applies to IPv6 as well (the engine disables IPv6 in containers of these networks; the
     * IPv6 rule is a second lock).
     */
    record Rule(String table, String chain, List<String> spec, boolean ipv6, String why) {}

    private static final String IFACES = INTERFACE_PREFIX + "+";

    /** Every rule this fence keeps in place. */
    static final List<Rule> RULES = List.of(
            new Rule(
                    "filter",
                    "INPUT",
                    List.of("-i", IFACES, "-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"),
                    false,
                    "no connection from a sandbox or build step to any address of the host"
                            + " (gateway, host interfaces, the userland proxy of published ports): answered at once"),
            new Rule(
                    "filter",
                    "INPUT",
                    List.of("-i", IFACES, "-j", "DROP"),
                    true,
                    "nothing else from a sandbox or build step reaches the host itself either (udp, icmp, ...)"),
            new Rule(
                    "filter",
                    "DOCKER-USER",
                    List.of("-i", IFACES, "-d", "169.254.0.0/16", "-j", "DROP"),
                    false,
                    "no link-local destinations: cloud metadata services (169.254.169.254) hand out credentials"),
            new Rule(
                    "filter",
                    "DOCKER-USER",
                    List.of("-i", IFACES, "-d", "100.100.100.200/32", "-j", "DROP"),
                    false,
                    "nor the metadata service outside link-local (Alibaba Cloud's), as the local runtime's sandboxes"),
            new Rule(
                    "filter",
                    "DOCKER-USER",
                    List.of("-i", IFACES, "-m", "conntrack", "--ctstate", "DNAT", "-j", "DROP"),
                    false,
                    "nothing the host forwards by address translation: ports other containers"
                            + " publish on the host's addresses are host services too"));

    private final DockerClient client;
    private final boolean onThisHost;
    private static final long RECHECK_NANOS = 2_000_000_000L;
    /** Whether this kernel has IPv6 at all (without it there is nothing to filter, nor an ip6tables to do it). */
    private static final boolean IPV6 = java.nio.file.Files.exists(java.nio.file.Path.of("/proc/net/if_inet6"));

    private volatile String problem;
    private long checkedAt = System.nanoTime() - RECHECK_NANOS;

    /**
     * @param onThisHost whether the engine runs on this host, so that its firewall is this host's
     */
    NetworkFence(DockerClient client, boolean onThisHost) {
        this.client = client;
        this.onThisHost = onThisHost;
    }

    /** Creates both networks when missing; refuses ones of that name made otherwise (they might let traffic pass). */
    void createNetworks() {
        ensureNetwork(SANDBOXES, INTERFACE_PREFIX + "sbx");
        ensureNetwork(BUILDS, INTERFACE_PREFIX + "bld");
    }

    private void ensureNetwork(String name, String bridge) {
        for (int attempt = 0; attempt < 3; attempt++) {
            try {
                Network existing =
                        client.inspectNetworkCmd().withNetworkId(name).exec();
                Map<String, String> options = existing.getOptions() == null ? Map.of() : existing.getOptions();
                if (!"bridge".equals(existing.getDriver())
                        || !"false".equals(options.get("com.docker.network.bridge.enable_icc"))
                        || !bridge.equals(options.get("com.docker.network.bridge.name"))) {
                    throw new IllegalStateException("the Docker network " + name + " exists but is not the one this"
                            + " server creates (a bridge named " + bridge + " with inter-container traffic off): remove"
                            + " it (docker network rm " + name + ") and start the server again");
                }
                return;
            } catch (NotFoundException e) {
                try {
                    client.createNetworkCmd()
                            .withName(name)
                            .withDriver("bridge")
                            .withCheckDuplicate(true)
                            .withOptions(Map.of(
                                    "com.docker.network.bridge.enable_icc",
                                    "false",
                                    "com.docker.network.bridge.name",
                                    bridge))
                            .withLabels(Map.of(LABEL_NETWORK, name))
                            .exec();
                    log.info("Created the Docker network {} (bridge {}, no inter-container traffic)", name, bridge);
                    return;
                } catch (ConflictException raced) {
                    // another server created it meanwhile: inspect it again
                }
            }
        }
        throw new IllegalStateException("cannot create the Docker network " + name);
    }

    /**
     * Applies the firewall rules that are missing; returns null when all are in place, else why they cannot be
     * (the engine is elsewhere, no root, no iptables). Cheap when nothing is missing: one check per rule.
     */
    synchronized String install() {
        if (!onThisHost) {
            return problem = "the Docker engine runs on another machine, whose firewall this server cannot set";
        }
        if (problem == null && System.nanoTime() - checkedAt < RECHECK_NANOS) {
            return null; // checked a moment ago: starts in a burst pay once
        }
        try {
            // each missing rule goes first in its chain: inserted last to first, they end up in the listed order
            for (int i = RULES.size() - 1; i >= 0; i--) {
                Rule r = RULES.get(i);
                apply("iptables", r);
                if (r.ipv6() && IPV6) {
                    apply("ip6tables", r);
                }
            }
            problem = null;
            checkedAt = System.nanoTime();
        } catch (IOException e) {
            if (problem == null || !problem.equals(e.getMessage())) {
                log.warn(
                        "Sandboxes with network and image builds may reach the host's own addresses: {}",
                        e.getMessage());
            }
            problem = e.getMessage();
        }
        return problem;
    }

    /** Why the rules are not in place, as of the last {@link #install()}; null when they are. */
    String problem() {
        return problem;
    }

    private static void apply(String tool, Rule r) throws IOException {
        if (run(tool, r, "-C") == 0) {
            return;
        }
        if (r.chain().equals("DOCKER-USER")) {
            run(List.of(tool, "-t", r.table(), "-N", r.chain())); // the engine makes it; fine if it exists
        }
        if (run(tool, r, "-I") != 0) {
            throw new IOException("cannot add the firewall rule '" + tool + " -t " + r.table() + " -I " + r.chain()
                    + " " + String.join(" ", r.spec()) + "' (" + r.why() + "): run the server as root on the"
                    + " engine's host with iptables installed (apt-get install iptables)");
        }
    }

    private static int run(String tool, Rule r, String action) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(tool, "-w", "5", "-t", r.table(), action, r.chain()));
        if (action.equals("-I")) {
            cmd.add("1");
        }
        cmd.addAll(r.spec());
        return run(cmd);
    }

    private static int run(List<String> cmd) throws IOException {
        Process p;
        try {
            p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        } catch (IOException e) {
            throw new IOException(cmd.get(0) + " cannot run (" + e.getMessage() + "): install iptables", e);
        }
        try {
            p.getOutputStream().close();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException(String.join(" ", cmd) + " did not finish within 30 s");
            }
            if (p.exitValue() != 0 && out.contains("Permission denied")) {
                throw new IOException(cmd.get(0) + " needs root: " + out.strip());
            }
            return p.exitValue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            p.destroyForcibly();
            throw new IOException("interrupted while running " + cmd.get(0), e);
        }
    }
}
