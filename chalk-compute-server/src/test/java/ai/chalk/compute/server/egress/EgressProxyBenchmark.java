package ai.chalk.compute.server.egress;

import static ai.chalk.compute.server.egress.Policies.header;
import static ai.chalk.compute.server.egress.Policies.hosts;
import static ai.chalk.compute.server.egress.Policies.with;
import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the egress proxy adds to HTTPS, against a direct connection to the same server measured in the same run: the
 * latency of a request on a new connection (TCP and TLS handshakes included) and on a kept-alive one, and the
 * throughput of one large download; for a host tunnelled untouched (CONNECT, SNI checked) and for one intercepted
 * (TLS ended at the proxy, a rule applied, TLS again to the server). The server is the Python one of
 * {@link EgressWorld} in its own network namespace; the client is this JVM. Prints, never asserts timings.
 */
@Tag("benchmark")
class EgressProxyBenchmark {

    private static final int CONNECTIONS = 200;
    private static final int KEPT_ALIVE = 500;
    private static final long DOWNLOAD_BYTES = 256L << 20;

    @Test
    void addedLatencyAndThroughputOfHttps(@TempDir Path dir) throws Exception {
        try (EgressWorld world = EgressWorld.start();
                EgressProxy proxy = EgressProxy.start(dir, world.options(), List.of())) {
            InetAddress at =
                    InetAddress.getByName("127." + ThreadLocalRandom.current().nextInt(1, 250) + "."
                            + ThreadLocalRandom.current().nextInt(1, 250) + ".9");
            EgressPolicy policy =
                    with(hosts("other.test"), "api.allowed.test", header(RequestMatch.ANY, "X-Bench", "1"));
            try (EgressEndpoint endpoint = proxy.open("benchmark", at, policy)) {
                SSLContext tls = RawHttps.trusting(world.caPem, proxy.caCertificate());
                RawHttps client = new RawHttps(tls, world.farA, new InetSocketAddress(at, EgressProxy.PROXY_PORT));
                System.out.printf(Locale.ROOT, "%nEgress proxy, HTTPS GET of a small JSON answer (ms):%n");
                System.out.printf(
                        Locale.ROOT,
                        "%-12s %28s %28s %12s%n",
                        "",
                        "new connection p50/p90/p99",
                        "kept alive p50/p90/p99",
                        "MB/s");
                double[] base = null;
                for (RawHttps.Way way : RawHttps.Way.values()) {
                    client.newConnection(way); // warm up: JIT, session caches, the proxy's certificate
                    long[] fresh = new long[CONNECTIONS];
                    for (int i = 0; i < fresh.length; i++) {
                        fresh[i] = client.newConnection(way);
                    }
                    long[] alive = client.keptAlive(way, KEPT_ALIVE);
                    double mbps = client.download(way, DOWNLOAD_BYTES);
                    double[] p = {
                        ms(fresh, 50), ms(fresh, 90), ms(fresh, 99), ms(alive, 50), ms(alive, 90), ms(alive, 99)
                    };
                    System.out.printf(
                            Locale.ROOT,
                            "%-12s %10.2f %8.2f %8.2f %10.2f %8.2f %8.2f %12.0f%n",
                            way.name().toLowerCase(Locale.ROOT),
                            p[0],
                            p[1],
                            p[2],
                            p[3],
                            p[4],
                            p[5],
                            mbps);
                    if (base == null) {
                        base = p;
                    } else {
                        System.out.printf(
                                Locale.ROOT,
                                "%-12s %+10.2f %26s %+10.2f%n",
                                "  added p50",
                                p[0] - base[0],
                                "",
                                p[3] - base[3]);
                    }
                }
                assertThat(world.receivedFor("api.allowed.test")).isNotEmpty();
                assertThat(world.receivedFor("api.allowed.test")
                                .get(0)
                                .get("headers")
                                .toString())
                        .contains("X-Bench");
            }
        }
    }

    private static double ms(long[] nanos, int percentile) {
        long[] s = nanos.clone();
        Arrays.sort(s);
        return s[Math.min(s.length - 1, s.length * percentile / 100)] / 1e6;
    }
}
