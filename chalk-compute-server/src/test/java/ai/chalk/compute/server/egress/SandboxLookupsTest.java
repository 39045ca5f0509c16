package ai.chalk.compute.server.egress;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A sandbox asking the egress proxy for names under a domain whose servers never answer holds at most
 * {@value SandboxLookups#AT_ONCE} lookups, and the proxy's lookup threads for no other sandbox. The lookups run on a
 * stand-in for the proxy's lookup threads that holds each until the test lets it go: a resolver that never answers
 * cannot be had here, where the JVM asks the host's resolver, which answers at once.
 */
class SandboxLookupsTest {

    /** Holds every lookup until {@link #answer}; a stand-in for a resolver that does not answer yet. */
    static final class SilentResolverStandIn implements Executor {
        final ConcurrentLinkedQueue<Runnable> held = new ConcurrentLinkedQueue<>();

        @Override
        public void execute(Runnable lookup) {
            held.add(lookup);
        }

        void answer() {
            Runnable r;
            while ((r = held.poll()) != null) {
                r.run();
            }
        }
    }

    @Test
    void aSandboxHoldsAtMostItsLookupsAndAnotherSandboxStillGetsItsOwn() throws Exception {
        SilentResolverStandIn resolver = new SilentResolverStandIn();
        Destinations destinations = new Destinations(Map.of(), List.of(), resolver);
        SandboxLookups greedy = new SandboxLookups(destinations);
        SandboxLookups other = new SandboxLookups(destinations);

        List<CompletableFuture<List<InetAddress>>> pending = new ArrayList<>();
        int refused = 0;
        for (int i = 0; i < 1000; i++) {
            CompletableFuture<List<InetAddress>> f = greedy.resolve("q" + i + ".never-answers.invalid");
            if (f == null) {
                refused++;
            } else {
                pending.add(f);
            }
        }
        assertThat(pending).hasSize(SandboxLookups.AT_ONCE);
        assertThat(refused).isEqualTo(1000 - SandboxLookups.AT_ONCE);
        assertThat(resolver.held).hasSize(SandboxLookups.AT_ONCE);
        assertThat(other.resolve("other.never-answers.invalid")).isNotNull();

        resolver.answer(); // the resolver finally says the names do not exist
        for (CompletableFuture<List<InetAddress>> f : pending) {
            assertThat(f.get(5, TimeUnit.SECONDS)).isEmpty();
        }
        assertThat(greedy.underWay()).isZero();
        assertThat(greedy.resolve("again.never-answers.invalid")).isNotNull();
        // names pinned by the options or written as addresses need no lookup thread, but count while they complete
        assertThat(new SandboxLookups(destinations).resolve("192.0.2.7").get())
                .containsExactly(InetAddress.getByName("192.0.2.7"));
    }

    /**
     * A lookup the proxy's queue cannot take fails as busy (worth asking again: SERVFAIL, 503), not as a name that does
     * not exist, and holds nothing.
     */
    @Test
    void aLookupTheProxysQueueCannotTakeIsBusyNotAMissingName() {
        Executor full = lookup -> {
            throw new RejectedExecutionException("every lookup thread busy and the queue full");
        };
        SandboxLookups lookups = new SandboxLookups(new Destinations(Map.of(), List.of(), full));
        assertThatThrownBy(() -> lookups.resolve("example.invalid").get())
                .hasCauseInstanceOf(SandboxLookups.Busy.class)
                .hasMessageContaining("try again");
        assertThat(lookups.underWay()).isZero();
    }

    /**
     * Through the proxy's HTTP port: while the sandbox has {@value SandboxLookups#AT_ONCE} lookups under way, a request
     * for one more name is answered 503 with {@code Retry-After}, saying why, where it was answered 403 as if the policy
     * refused the name; once the resolver answers, the held requests get its answer (the names do not exist: 403).
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aRequestWhoseNameCannotBeLookedUpNowIsAskedToRetryNotRefused(@TempDir Path dir) throws Exception {
        SilentResolverStandIn resolver = new SilentResolverStandIn();
        InetAddress at =
                InetAddress.getByName("127." + ThreadLocalRandom.current().nextInt(1, 250) + "."
                        + ThreadLocalRandom.current().nextInt(1, 250) + ".11");
        List<Socket> held = new ArrayList<>();
        try (EgressProxy proxy = EgressProxy.startWithResolver(dir, EgressOptions.DEFAULTS, resolver);
                EgressEndpoint endpoint = proxy.open("busy", at, Policies.hosts("*.slow.invalid"))) {
            for (int i = 0; i < SandboxLookups.AT_ONCE; i++) {
                held.add(request(at, "q" + i + ".slow.invalid"));
            }
            while (resolver.held.size() < SandboxLookups.AT_ONCE) {
                Thread.sleep(5);
            }
            try (Socket more = request(at, "more.slow.invalid")) {
                String answer = readAll(more);
                assertThat(answer)
                        .startsWith("HTTP/1.1 503 Service Unavailable")
                        .containsIgnoringCase("retry-after: 1")
                        .contains("GET http://more.slow.invalid/")
                        .contains(SandboxLookups.AT_ONCE + " name lookups under way already");
            }
            resolver.answer();
            for (Socket s : held) {
                assertThat(readAll(s)).startsWith("HTTP/1.1 403 Forbidden").contains("does not resolve");
            }
        } finally {
            for (Socket s : held) {
                s.close();
            }
        }
    }

    private static Socket request(InetAddress proxy, String host) throws Exception {
        Socket s = new Socket(proxy, EgressProxy.PROXY_PORT);
        s.setSoTimeout(30_000);
        s.getOutputStream()
                .write(("GET http://" + host + "/ HTTP/1.1\r\nHost: " + host + "\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
        s.getOutputStream().flush();
        return s;
    }

    private static String readAll(Socket s) throws Exception {
        return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
}
