package ai.chalk.compute.server.egress;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

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

    @Test
    void aLookupTheProxysQueueCannotTakeDoesNotResolveInsteadOfFailingTheConnection() throws Exception {
        Executor full = lookup -> {
            throw new RejectedExecutionException("every lookup thread busy and the queue full");
        };
        SandboxLookups lookups = new SandboxLookups(new Destinations(Map.of(), List.of(), full));
        assertThat(lookups.resolve("example.invalid").get()).isEmpty();
        assertThat(lookups.underWay()).isZero();
    }
}
