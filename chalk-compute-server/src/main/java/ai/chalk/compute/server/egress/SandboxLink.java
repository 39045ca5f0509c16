package ai.chalk.compute.server.egress;

import io.netty.handler.ssl.SslContext;
import java.net.InetAddress;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What every connection of one sandbox's endpoint shares: the sandbox, its policy, and the proxy's means (where names
 * resolve, what is forbidden, the TLS contexts). Refusals are logged here, at DEBUG, naming the sandbox, the destination
 * and the reason, never a header or a secret.
 */
final class SandboxLink {

    private static final Logger log = LoggerFactory.getLogger(EgressProxy.class);

    private final SandboxLookups lookups;
    /** The sandbox's connections held now. */
    private final AtomicInteger connections = new AtomicInteger();
    /** Whether a connection past a bound has been logged at WARN for this sandbox yet. */
    private final AtomicBoolean warnedOfConnections = new AtomicBoolean();

    private final String sandboxId;
    private final EgressPolicy policy;
    private final InetAddress proxyAddress;
    private final EgressProxy proxy;

    SandboxLink(String sandboxId, EgressPolicy policy, InetAddress proxyAddress, EgressProxy proxy) {
        this.sandboxId = sandboxId;
        this.policy = policy;
        this.proxyAddress = proxyAddress;
        this.proxy = proxy;
        this.lookups = new SandboxLookups(proxy.destinations());
    }

    String sandboxId() {
        return sandboxId;
    }

    EgressPolicy policy() {
        return policy;
    }

    /** The proxy's own address on the sandbox's link: what the resolver answers for allowed names. */
    InetAddress proxyAddress() {
        return proxyAddress;
    }

    /**
     * Whether a connection to {@code host} on {@code port} may go out, and where to. A name neither listed nor
     * possibly in a route is refused without a lookup: made-up names never reach a resolver outside. Fails with
     * {@link SandboxLookups.Busy} when the lookup cannot be made now.
     */
    CompletableFuture<Decision> decide(String host, int port) {
        if (policy.entryFor(host).isEmpty() && policy.allowedRoutes().isEmpty()) {
            return CompletableFuture.completedFuture(Decision.refuse(host + " is not in allowed_hosts"));
        }
        return resolve(host).thenApply(a -> policy.decide(host, port, a, proxy.destinations()::forbidden));
    }

    /**
     * The addresses of a forward_url's host that may be connected to: not denied, not forbidden. Fails with
     * {@link SandboxLookups.Busy} when the lookup cannot be made now.
     */
    CompletableFuture<List<InetAddress>> forwardTarget(String host) {
        return resolve(host)
                .thenApply(found -> found.stream()
                        .filter(a -> !policy.denied(a) && !proxy.destinations().forbidden(a))
                        .toList());
    }

    /**
     * The addresses of {@code host}, as the proxy resolves them; failed with {@link SandboxLookups.Busy} when the
     * sandbox has its lookups under way already (a resolver answers that with SERVFAIL, which clients retry, not with
     * the name's absence).
     */
    CompletableFuture<List<InetAddress>> resolve(String host) {
        CompletableFuture<List<InetAddress>> addresses = lookups.resolve(host);
        if (addresses == null) {
            refused("a lookup of " + host, busy());
            return CompletableFuture.failedFuture(new SandboxLookups.Busy(busy()));
        }
        return addresses;
    }

    /** Counts a connection the sandbox opened; returns how many it holds with it. */
    int connectionOpened() {
        return connections.incrementAndGet();
    }

    /** Counts a connection of the sandbox's that closed, or was refused. */
    void connectionClosed() {
        connections.decrementAndGet();
    }

    /** A connection closed as it was accepted, past a bound: a WARN the first time for the sandbox, then DEBUG. */
    void refusedConnection(String reason) {
        if (warnedOfConnections.compareAndSet(false, true)) {
            log.warn(
                    "Sandbox {}: egress connections past a bound are closed as they are accepted: {}",
                    sandboxId,
                    reason);
        } else {
            refused("a connection", reason);
        }
    }

    private static String busy() {
        return "the sandbox has " + SandboxLookups.AT_ONCE + " name lookups under way already, the most it may; try"
                + " again";
    }

    /** The server side of an intercepted connection to {@code host}: a certificate of the server's CA. */
    SslContext interceptContext(String host) {
        return proxy.interceptContext(host);
    }

    /** The client side of connections to intercepted hosts: their certificates verified, their names checked. */
    SslContext upstreamContext() {
        return proxy.upstreamContext();
    }

    void refused(String what, String reason) {
        if (log.isDebugEnabled()) {
            log.debug("Sandbox {}: egress refused: {}: {}", sandboxId, what, reason);
        }
    }

    void allowed(String what) {
        if (log.isTraceEnabled()) {
            log.trace("Sandbox {}: egress allowed: {}", sandboxId, what);
        }
    }
}
