package ai.chalk.compute.server.runtime.network;

import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.threads.DaemonThreads;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.UnaryOperator;

/**
 * Gives a sandbox that has its own network namespace (created with {@code bwrap --unshare-net} or
 * {@code unshare --net}: nothing but {@code lo} inside) a way out, and only that.
 *
 * <p>{@link #attach} first installs {@link EgressRules} in the namespace ({@code nsenter --net} and the host's
 * {@code nft}, run by the server, so nothing from the sandbox's file system runs), then starts slirp4netns on the
 * host, attached to the namespace: it adds {@value #INTERFACE} ({@value #ADDRESS}, default route via
 * {@value #GATEWAY}, MTU {@value #MTU}) and carries the sandbox's connections as its own sockets (NAT in user
 * space). In that order, sandbox code that runs early finds no network rather than an unfiltered one.
 * slirp4netns runs with {@code --disable-host-loopback} (the gateway is not the host's 127.0.0.1),
 * {@code --enable-sandbox} (its own mount namespace over an empty root, capabilities dropped) and
 * {@code --enable-seccomp}; it has no API socket, so nothing can add a port forward.
 *
 * <p>Sandbox code runs without CAP_NET_ADMIN in the namespace's owning user namespace, so it can neither change the
 * rules nor the routes. Name resolution: point the sandbox's {@code /etc/resolv.conf} at {@value #RESOLVER}
 * ({@link #resolvConf}), which slirp4netns forwards to the host's resolver.
 */
public final class SandboxNetwork {

    /** The network slirp4netns puts the sandbox on. */
    public static final String SLIRP_CIDR = "10.0.2.0/24";
    /** slirp's gateway: the host, as slirp sees it (refused by the rules; host loopback disabled as well). */
    public static final String GATEWAY = "10.0.2.2";
    /** slirp's DNS forwarder, the one address of its network the sandbox may reach (port 53). */
    public static final String RESOLVER = "10.0.2.3";
    /** The sandbox's address. */
    public static final String ADDRESS = "10.0.2.100";
    /** The interface slirp4netns creates in the sandbox. */
    public static final String INTERFACE = "tap0";
    /** slirp4netns' largest useful MTU: fewer, larger packets through the user-mode stack. */
    public static final int MTU = 65520;
    /** How long slirp4netns may take to bring the interface up. */
    static final long READY_SECONDS = 10;

    /**
     * Starts a host process. A parent-death signal follows the thread that forked the process, so a runtime passes
     * a thread that lives as long as its sandboxes (the local runtime's spawner).
     */
    @FunctionalInterface
    public interface Spawner {
        Process start(ProcessBuilder builder) throws IOException;
    }

    private final EgressTools tools;
    private final List<String> alsoBlocked;
    private final Spawner spawner;

    /**
     * @param tools       the host programs
     * @param alsoBlocked prefixes refused besides {@link BlockedDestinations#ofThisHost()}
     * @param spawner     starts slirp4netns
     */
    public SandboxNetwork(EgressTools tools, List<String> alsoBlocked, Spawner spawner) {
        this.tools = tools;
        this.alsoBlocked = List.copyOf(alsoBlocked);
        alsoBlocked.forEach(Prefix::parse); // a typo fails here, not at the first sandbox
        this.spawner = spawner;
    }

    /** With the tools of this host, or what to install. */
    public static SandboxNetwork onThisHost(Spawner spawner) throws RuntimeStartException {
        return new SandboxNetwork(EgressTools.find(), List.of(), spawner);
    }

    /** One-off: {@link #onThisHost} then {@link #attach(Path, long)}. */
    public static Egress attachOnThisHost(Path stateDir, long pid, Spawner spawner)
            throws RuntimeStartException, IOException {
        return onThisHost(spawner).attach(stateDir, pid);
    }

    /** The {@code /etc/resolv.conf} of a sandbox with network. */
    public static String resolvConf() {
        return "nameserver " + RESOLVER + "\n";
    }

    /**
     * Firewalls and connects the network namespace of host process {@code pid}, which must not be the server's. The
     * returned egress must be closed when the sandbox ends (it also ends by itself when that process does).
     *
     * @param stateDir the sandbox's state directory: slirp4netns' log goes to {@code slirp4netns.log} there
     * @param pid      a process holding the sandbox's network namespace (its init), on the host's pid numbering
     */
    public Egress attach(Path stateDir, long pid) throws IOException {
        return attach(stateDir, pid, UnaryOperator.identity());
    }

    /**
     * As {@link #attach(Path, long)}, slirp4netns started by the command {@code confine} makes of its own: the
     * sandbox's cgroups and open-file limit, so that what it holds for the sandbox (its heap, its sockets' kernel
     * buffers, its CPU time, one socket per connection the sandbox opens) counts against the sandbox's limits, not
     * the host's.
     */
    public Egress attach(Path stateDir, long pid, UnaryOperator<List<String>> confine) throws IOException {
        Path netns = Path.of("/proc", Long.toString(pid), "ns", "net");
        String target = namespace(netns, pid);
        if (target.equals(
                namespace(Path.of("/proc/self/ns/net"), ProcessHandle.current().pid()))) {
            throw new IOException("process " + pid + " shares the server's network namespace; start the sandbox in "
                    + "its own (bwrap --unshare-net, unshare --net) before giving it network");
        }
        String rules = EgressRules.render(BlockedDestinations.ofThisHost().plus(alsoBlocked));
        String nft = EgressTools.run(
                List.of(
                        tools.nsenter().toString(),
                        "--net=" + netns,
                        "--",
                        tools.nft().toString(),
                        "-f",
                        "-"),
                rules);
        if (nft != null) {
            throw new IOException("cannot install the sandbox's firewall rules (nft in its network namespace): " + nft);
        }
        if (!target.equals(namespace(netns, pid))) {
            throw new IOException("process " + pid + " ended while its network was set up");
        }
        Files.createDirectories(stateDir);
        File log = stateDir.resolve("slirp4netns.log").toFile();
        ProcessBuilder pb = new ProcessBuilder(confine.apply(List.of(
                        tools.setpriv().toString(),
                        "--pdeathsig",
                        "KILL",
                        "--",
                        tools.slirp4netns().toString(),
                        "--configure",
                        "--mtu=" + MTU,
                        "--disable-host-loopback",
                        "--enable-sandbox",
                        "--enable-seccomp",
                        "--ready-fd=1",
                        // by path: given a pid, slirp4netns would join the process's user namespace too, a
                        // sandbox's own, where it has no right over the network namespace (the host's root owns it)
                        "--netns-type=path",
                        netns.toString(),
                        INTERFACE)))
                .directory(new File("/"))
                // no --exit-fd pipe: the server would hold its end for each sandbox with network, and every process
                // it starts inherits and closes each descriptor it holds; it ends slirp4netns with a signal instead
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .redirectError(ProcessBuilder.Redirect.appendTo(log));
        pb.environment().clear();
        pb.environment().put("PATH", EgressTools.SEARCH_PATH);
        Process slirp = spawner.start(pb);
        Egress egress = new Egress(pid, slirp);
        CompletableFuture<Void> ready = new CompletableFuture<>();
        DaemonThreads.start("chalk-slirp-" + pid, () -> awaitReady(slirp.getInputStream(), ready));
        try {
            ready.get(READY_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException | TimeoutException e) {
            egress.close();
            throw new IOException("slirp4netns did not bring up the sandbox's network within " + READY_SECONDS + " s: "
                    + tail(log.toPath()));
        } catch (InterruptedException e) {
            egress.close();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while the sandbox's network came up", e);
        }
        ProcessHandle.of(pid).ifPresentOrElse(h -> h.onExit().thenRun(egress::close), egress::close);
        return egress;
    }

    /** Completes when slirp4netns writes its ready mark ({@code 1} at the start of a line); then drains. */
    private static void awaitReady(InputStream out, CompletableFuture<Void> ready) {
        try (out) {
            int previous = '\n';
            int b;
            while ((b = out.read()) >= 0) {
                if (b == '1' && previous == '\n') {
                    ready.complete(null);
                }
                previous = b;
            }
        } catch (IOException e) {
            // it ended
        }
        ready.completeExceptionally(new IOException("slirp4netns ended"));
    }

    private static String namespace(Path link, long pid) throws IOException {
        try {
            return Files.readSymbolicLink(link).toString();
        } catch (IOException e) {
            throw new IOException("process " + pid + " is gone (its network namespace cannot be read)", e);
        }
    }

    private static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            List<String> last = new ArrayList<>(lines.subList(Math.max(0, lines.size() - 5), lines.size()));
            return last.isEmpty() ? "it printed nothing" : String.join("; ", last);
        } catch (IOException e) {
            return "its log " + log + " cannot be read";
        }
    }
}
