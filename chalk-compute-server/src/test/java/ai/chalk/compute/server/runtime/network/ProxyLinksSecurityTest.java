package ai.chalk.compute.server.runtime.network;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.server.egress.EgressProxy;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A sandbox's link to the egress proxy against the host's other services and the host's other users. The proxy tells
 * sandboxes apart by the link address reached, and is the only thing meant to answer there: a host service listening on
 * every address answered a sandbox on its link whenever the proxy did not listen there (the link is up before the
 * proxy listens, and after it closed), and anyone reaching the address from elsewhere (a local process, a container of
 * another bridge) was served as that sandbox, with its credentials. The host's rules are the ones every server installs
 * (the proxy's own ports); a host service on the proxy's port conflicts with the proxies of other tests, so this runs
 * alone.
 */
@Tag("alone")
class ProxyLinksSecurityTest {

    private NetnsTesting netns;
    private ProxyLinks.Link link;
    private ServerSocket hostService;

    @BeforeEach
    void start() throws Exception {
        netns = new NetnsTesting();
        ProxyLinks links = ProxyLinks.onThisHost(
                new int[] {EgressProxy.PROXY_PORT, EgressProxy.HTTP_PORT, EgressProxy.HTTPS_PORT},
                EgressProxy.DNS_PORT);
        link = links.reserve();
    }

    @AfterEach
    void stop() throws Exception {
        if (hostService != null) {
            hostService.close();
        }
        link.close();
        netns.close();
    }

    /** A host service on every address, on the proxy's port, that says hello to whoever connects. */
    private void startHostService() throws IOException {
        hostService = new ServerSocket();
        hostService.setReuseAddress(true);
        hostService.bind(new InetSocketAddress("0.0.0.0", EgressProxy.PROXY_PORT));
        Thread t = new Thread(() -> {
            while (!hostService.isClosed()) {
                try (Socket s = hostService.accept();
                        OutputStream out = s.getOutputStream()) {
                    out.write("hello from the host\n".getBytes(StandardCharsets.US_ASCII));
                } catch (IOException e) {
                    // closed
                }
            }
        });
        t.setDaemon(true);
        t.start();
    }

    @Test
    void aHostServiceOnEveryAddressDoesNotAnswerOnALinkWhereTheProxyDoesNotListen() throws Exception {
        startHostService();
        Process sandbox = netns.namespace();
        link.attach(sandbox.pid());

        NetnsTesting.Result r =
                NetnsTesting.connect(sandbox.pid(), link.hostAddress().getHostAddress(), EgressProxy.PROXY_PORT);
        assertThat(r.output()).doesNotContain("hello from the host");
        assertThat(r.exitCode()).isNotZero();
    }

    @Test
    void aLinkAddressDoesNotAnswerFromTheHostItself() throws Exception {
        // the proxy's place on this link, taken by a listener of the link's own address as the proxy binds it
        try (ServerSocket proxy = new ServerSocket()) {
            proxy.bind(new InetSocketAddress(link.hostAddress(), EgressProxy.PROXY_PORT));
            try (Socket s = new Socket()) {
                assertThatThrownBy(() ->
                                s.connect(new InetSocketAddress(link.hostAddress(), EgressProxy.PROXY_PORT), 1_000))
                        .isInstanceOf(IOException.class);
            }
        }
    }
}
