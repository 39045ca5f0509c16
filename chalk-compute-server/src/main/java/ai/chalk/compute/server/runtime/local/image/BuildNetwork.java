package ai.chalk.compute.server.runtime.local.image;

import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.local.cgroup.CgroupEntry;
import ai.chalk.compute.server.runtime.local.cgroup.SandboxCgroup;
import ai.chalk.compute.server.runtime.network.Egress;
import ai.chalk.compute.server.runtime.network.SandboxNetwork;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * The network of build steps: each step has its own network namespace ({@code bwrap --unshare-net}) with the egress
 * of a sandbox with network ({@link SandboxNetwork}: out through slirp4netns, the host's loopback and addresses and
 * cloud metadata refused), so {@code apt-get} works and the server's API does not answer. Where slirp4netns or nft
 * is missing, steps run with no network at all, and a failed step says why.
 */
final class BuildNetwork {

    private final Optional<SandboxNetwork> network;
    private final String problem;
    private final Path dir;
    private final Path resolvConf;

    private BuildNetwork(Optional<SandboxNetwork> network, String problem, Path dir) throws IOException {
        this.network = network;
        this.problem = problem;
        this.dir = Files.createDirectories(dir);
        this.resolvConf = dir.resolve("resolv.conf");
        Files.writeString(resolvConf, SandboxNetwork.resolvConf(), StandardCharsets.US_ASCII);
    }

    /**
     * With this host's tools. slirp4netns is started by the step's own thread, which waits for the step: its
     * parent-death signal then outlives the step, which is all it must.
     *
     * @param dir where slirp4netns logs and the steps' {@code resolv.conf} is kept
     */
    static BuildNetwork onThisHost(Path dir) throws IOException {
        try {
            return new BuildNetwork(Optional.of(SandboxNetwork.onThisHost(ProcessBuilder::start)), null, dir);
        } catch (RuntimeStartException e) {
            org.slf4j.LoggerFactory.getLogger(BuildNetwork.class)
                    .warn("Image build steps have no network: {}", e.getMessage());
            return new BuildNetwork(Optional.empty(), e.getMessage(), dir);
        }
    }

    /** Why steps have no network here, when they have none. */
    Optional<String> problem() {
        return Optional.ofNullable(problem);
    }

    /** The {@code /etc/resolv.conf} a step sees: slirp's resolver. */
    Path resolvConf() {
        return resolvConf;
    }

    /**
     * Connects the step that {@code bwrap} (started with {@code --unshare-net}) runs; empty without network. The
     * step must not have been let go yet. slirp4netns runs in the step's cgroups ({@code group}, when it has them)
     * with the step's open-file limit: what it holds for the step counts against the step's limits.
     */
    Optional<Egress> attach(Process bwrap, @Nullable SandboxCgroup group, int openFiles)
            throws IOException, InterruptedException {
        if (network.isEmpty()) {
            return Optional.empty();
        }
        List<Path> procs = group == null ? List.of() : group.newExec().procsFiles();
        return Optional.of(network.get()
                .attach(dir, namespaceHolder(bwrap), command -> CgroupEntry.command(procs, openFiles, command)));
    }

    /**
     * bubblewrap's child, the first process in the step's new network namespace, once it has set the namespace up:
     * it configures the namespace's loopback over netlink before it starts the step (its child), and slirp4netns
     * configuring the same namespace meanwhile made that fail now and then ({@code bwrap: loopback: Failed
     * RTM_NEWADDR}, with a stale error text: its reply check saw a port id that was not its own).
     */
    private static long namespaceHolder(Process bwrap) throws IOException, InterruptedException {
        String own = Files.readSymbolicLink(Path.of("/proc/self/ns/net")).toString();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (bwrap.isAlive() && System.nanoTime() < deadline) {
            for (ProcessHandle child : bwrap.toHandle().children().toList()) {
                try {
                    Path ns = Path.of("/proc", Long.toString(child.pid()), "ns", "net");
                    if (!Files.readSymbolicLink(ns).toString().equals(own)
                            && child.children().findAny().isPresent()) {
                        return child.pid();
                    }
                } catch (IOException e) {
                    // it ended meanwhile
                }
            }
            Thread.sleep(1);
        }
        throw new IOException("the build sandbox ended before its network was set up");
    }
}
