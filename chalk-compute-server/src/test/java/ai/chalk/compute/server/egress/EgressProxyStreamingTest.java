package ai.chalk.compute.server.egress;

import static ai.chalk.compute.server.egress.Policies.header;
import static ai.chalk.compute.server.egress.Policies.hosts;
import static ai.chalk.compute.server.egress.Policies.with;
import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Large bodies stream through the proxy both ways, tunnelled and intercepted, whichever side is faster: reading stops
 * while the other side cannot take more and always resumes (a stall would end in the timeout), and the proxy never
 * holds a whole body.
 */
class EgressProxyStreamingTest {

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void bigDownloadsAndUploadsGoThroughTunnelsAndInterception(@TempDir Path dir) throws Exception {
        try (EgressWorld world = EgressWorld.start();
                EgressProxy proxy = EgressProxy.start(dir, world.options(), List.of())) {
            InetAddress at =
                    InetAddress.getByName("127." + ThreadLocalRandom.current().nextInt(1, 250) + "."
                            + ThreadLocalRandom.current().nextInt(1, 250) + ".10");
            try (EgressEndpoint endpoint = proxy.open(
                    "streaming",
                    at,
                    with(hosts("other.test"), "api.allowed.test", header(RequestMatch.ANY, "X-S", "1")))) {
                RawHttps client = new RawHttps(
                        RawHttps.trusting(world.caPem, proxy.caCertificate()),
                        world.farA,
                        new InetSocketAddress(at, EgressProxy.PROXY_PORT));
                for (RawHttps.Way way : List.of(RawHttps.Way.TUNNELLED, RawHttps.Way.INTERCEPTED)) {
                    assertThat(client.download(way, 96L << 20))
                            .as("%s download MB/s", way)
                            .isPositive();
                    assertThat(client.upload(way, 48 << 20))
                            .as("%s upload MB/s", way)
                            .isPositive();
                }
                assertThat(world.received())
                        .filteredOn(r -> r.get("path").asText().equals("/upload"))
                        .extracting(r -> r.get("body").asText())
                        .containsExactly("uploaded 50331648 bytes", "uploaded 50331648 bytes");
            }
        }
    }
}
