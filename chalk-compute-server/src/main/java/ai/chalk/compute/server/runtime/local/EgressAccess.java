package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.egress.EgressEndpoint;
import ai.chalk.compute.server.egress.EgressOptions;
import ai.chalk.compute.server.egress.EgressPolicy;
import ai.chalk.compute.server.egress.EgressProxy;
import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.network.ProxyLinks;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * How a local runtime's sandboxes with a network policy get out: each through a {@link ProxyLinks link} of its own to
 * the runtime's {@link EgressProxy}, which both start with the first such sandbox (the proxy's CA under
 * {@code <stateDir>/egress}). Where that cannot work (no CAP_NET_ADMIN, no iproute2 or nftables), every such create is
 * refused with the reason.
 */
final class EgressAccess implements AutoCloseable {

    private final Path dir;
    private final EgressOptions options;
    private ProxyLinks links; // guarded by this
    private EgressProxy proxy; // guarded by this
    private boolean closed; // guarded by this

    EgressAccess(Path dir, EgressOptions options) {
        this.dir = dir;
        this.options = options;
    }

    /** The proxy and links, started now if this is the first sandbox with a policy. */
    private synchronized void ready() throws RuntimeStartException {
        if (closed) {
            throw new RuntimeStartException("the local runtime is shut down");
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

    /** A link for a new sandbox, its addresses fixed; it must be attached or closed. */
    ProxyLinks.Link reserve() throws RuntimeStartException {
        ready();
        try {
            return links.reserve();
        } catch (IOException e) {
            throw new RuntimeStartException("cannot give the sandbox its network link: " + e.getMessage(), e);
        }
    }

    /** What sandboxes with a policy trust, bound into them read-only. */
    synchronized Path trustDir() throws RuntimeStartException {
        ready();
        return proxy.trustDir();
    }

    /**
     * Moves {@code link}'s end into the namespace of host process {@code pid} and serves the sandbox there.
     *
     * @return what closes both when the sandbox ends
     */
    SandboxInit.WayOut attach(ProxyLinks.Link link, long pid, String sandboxId, EgressPolicy policy)
            throws RuntimeStartException {
        EgressProxy p;
        synchronized (this) {
            p = proxy;
        }
        try {
            link.attach(pid);
            EgressEndpoint endpoint = p.open(sandboxId, link.hostAddress(), policy);
            return () -> {
                endpoint.close();
                link.close();
            };
        } catch (IOException e) {
            throw new RuntimeStartException("cannot give the sandbox its network link: " + e.getMessage(), e);
        }
    }

    @Override
    public synchronized void close() {
        closed = true;
        if (proxy != null) {
            proxy.close();
        }
    }
}
