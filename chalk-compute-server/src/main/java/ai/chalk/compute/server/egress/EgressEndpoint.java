package ai.chalk.compute.server.egress;

import io.netty.channel.Channel;
import io.netty.channel.group.ChannelGroup;
import java.net.InetAddress;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One sandbox's side of the egress proxy: its listeners on the proxy's address on the sandbox's link, and every
 * connection made through them. Closing it ends them all.
 */
public final class EgressEndpoint implements AutoCloseable {

    private final String sandboxId;
    private final InetAddress address;
    private final List<Channel> listeners;
    private final ChannelGroup connections;
    private final AtomicBoolean closed = new AtomicBoolean();

    EgressEndpoint(String sandboxId, InetAddress address, List<Channel> listeners, ChannelGroup connections) {
        this.sandboxId = sandboxId;
        this.address = address;
        this.listeners = List.copyOf(listeners);
        this.connections = connections;
    }

    /** The proxy's address on the sandbox's link. */
    public InetAddress address() {
        return address;
    }

    /**
     * The environment that points a sandbox's clients at the proxy at {@code proxy}: {@code HTTP_PROXY},
     * {@code HTTPS_PROXY} (and their lower-case forms, which curl and Python prefer), {@code NO_PROXY} for its own
     * loopback, the CA bundle variables of {@link SandboxTrust#env()}, and {@code JAVA_TOOL_OPTIONS} with the same for
     * Java (which reads no proxy variable).
     */
    public static Map<String, String> sandboxEnv(InetAddress proxy) {
        String a = proxy.getHostAddress();
        String url = "http://" + a + ":" + EgressProxy.PROXY_PORT;
        Map<String, String> env = new LinkedHashMap<>();
        for (String name : List.of("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")) {
            env.put(name, url);
        }
        env.put("NO_PROXY", "localhost,127.0.0.1,::1");
        env.put("no_proxy", "localhost,127.0.0.1,::1");
        env.putAll(SandboxTrust.env());
        env.put(
                "JAVA_TOOL_OPTIONS",
                SandboxTrust.javaOptions() + " -Dhttp.proxyHost=" + a + " -Dhttp.proxyPort=" + EgressProxy.PROXY_PORT
                        + " -Dhttps.proxyHost=" + a + " -Dhttps.proxyPort=" + EgressProxy.PROXY_PORT
                        + " -Dhttp.nonProxyHosts=localhost|127.0.0.1");
        return env;
    }

    /** Stops listening and closes every connection of the sandbox; idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        listeners.forEach(l -> l.close().awaitUninterruptibly());
        connections.close().awaitUninterruptibly();
    }

    @Override
    public String toString() {
        return "EgressEndpoint[" + sandboxId + " on " + address.getHostAddress() + "]";
    }
}
