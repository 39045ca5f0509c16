package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.network.Egress;
import ai.chalk.compute.server.runtime.network.SandboxNetwork;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Optional;
import java.util.function.UnaryOperator;
import org.jspecify.annotations.Nullable;

/**
 * How a local runtime's sandboxes with network reach it ({@link SandboxNetwork}: slirp4netns behind the rules that
 * keep the host and cloud metadata out of reach), or why they cannot here; and the resolver configuration bound into
 * them.
 */
final class NetworkAccess {

    private final @Nullable SandboxNetwork network;
    private final @Nullable String problem;
    private final Path resolvConf;

    private NetworkAccess(@Nullable SandboxNetwork network, @Nullable String problem, Path resolvConf) {
        this.network = network;
        this.problem = problem;
        this.resolvConf = resolvConf;
    }

    /**
     * What this host offers sandboxes with network; writes the resolver configuration into {@code stateDir}.
     *
     * @param spawner starts the network helpers, which must die with the runtime as the inits do
     */
    static NetworkAccess onThisHost(Path stateDir, InitSpawner spawner) {
        SandboxNetwork net = null;
        String netProblem = null;
        try {
            net = SandboxNetwork.onThisHost(spawner::start);
        } catch (RuntimeStartException e) {
            netProblem = e.getMessage();
        }
        Path resolvConf = stateDir.resolve("resolv.conf");
        try {
            Files.writeString(resolvConf, SandboxNetwork.resolvConf());
            Files.setPosixFilePermissions(resolvConf, PosixFilePermissions.fromString("rw-r--r--"));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + resolvConf, e);
        }
        return new NetworkAccess(net, netProblem, resolvConf);
    }

    /**
     * Gives the network namespace held by host process {@code pid} egress through slirp4netns, behind the rules that
     * keep the host and cloud metadata out of reach; slirp4netns is started by the command {@code confine} makes of
     * its own.
     *
     * @throws RuntimeStartException when this host lacks what that needs, or the set-up failed
     */
    Egress attach(Path sandboxDir, long pid, UnaryOperator<List<String>> confine) throws RuntimeStartException {
        if (network == null) {
            throw new RuntimeStartException(problem);
        }
        try {
            return network.attach(sandboxDir, pid, confine);
        } catch (IOException e) {
            throw new RuntimeStartException("cannot give the sandbox its network: " + e.getMessage(), e);
        }
    }

    /** Why sandboxes with network cannot be created here; empty when they can. */
    Optional<String> problem() {
        return Optional.ofNullable(problem);
    }

    /** The resolver configuration bound into sandboxes with network. */
    Path resolvConf() {
        return resolvConf;
    }
}
