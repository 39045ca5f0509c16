package ai.chalk.compute.server.egress;

import java.net.InetAddress;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * One sandbox's name lookups, at most {@value #AT_ONCE} under way at once. A lookup holds one of the proxy's few lookup
 * threads until the resolver answers, which for a name under a domain whose servers never answer takes seconds, so one
 * sandbox asking for such names in a loop (any name, when its policy allows a route) would otherwise hold them all
 * and stall every other sandbox's lookups, or, with as many threads as lookups, the server's threads and memory.
 */
final class SandboxLookups {

    /** Lookups of one sandbox under way at once, at most. */
    static final int AT_ONCE = 16;

    private final Destinations destinations;
    private final AtomicInteger underWay = new AtomicInteger();

    SandboxLookups(Destinations destinations) {
        this.destinations = destinations;
    }

    /** The addresses of {@code host}; null, at once, when the sandbox has {@value #AT_ONCE} lookups under way. */
    @Nullable
    CompletableFuture<List<InetAddress>> resolve(String host) {
        if (underWay.incrementAndGet() > AT_ONCE) {
            underWay.decrementAndGet();
            return null;
        }
        try {
            return destinations.resolve(host).whenComplete((a, e) -> underWay.decrementAndGet());
        } catch (RuntimeException e) {
            underWay.decrementAndGet();
            throw e;
        }
    }

    /**
     * A lookup not made because the sandbox has {@value #AT_ONCE} under way, or every lookup thread of the proxy is
     * busy and its queue full: worth asking again (a resolver answers SERVFAIL, the HTTP proxy 503), unlike a name
     * that does not resolve.
     */
    static final class Busy extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Busy(String message) {
            super(message, null, false, false);
        }

        /** The {@link Busy} that {@code failure} is or wraps (a stage's {@code CompletionException}); null if none. */
        static @Nullable Busy in(@Nullable Throwable failure) {
            for (Throwable t = failure; t != null; t = t.getCause()) {
                if (t instanceof Busy busy) {
                    return busy;
                }
            }
            return null;
        }
    }

    /** Lookups under way now. */
    int underWay() {
        return underWay.get();
    }
}
