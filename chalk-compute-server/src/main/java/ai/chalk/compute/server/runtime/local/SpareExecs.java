package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.host.OutputPipes;
import ai.chalk.compute.server.runtime.host.Procfs;
import ai.chalk.compute.server.runtime.local.cgroup.ExecCgroup;
import java.io.IOException;
import java.io.OutputStream;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The spare exec helpers of one sandbox (see {@link SandboxCommands#spare}): started ahead of time, so that an exec
 * does not wait for the namespace entry, the capability drop and the cgroup migration. They are started on demand: a
 * sandbox's first two execs take the direct path (a sandbox used once should not pay for helpers it never uses), the
 * second leaves {@link #SPARES} starting behind it, and every later exec tops them up again.
 *
 * <p>Spares that no exec took for {@link #IDLE} are let go of, with their exec groups; the next two execs take the
 * direct path, as a fresh sandbox's do, and the second starts them again. Each holds three pipes in the server, and every process the server starts inherits each descriptor it holds
 * and closes them one by one: with 1,000 sandboxes keeping their spares, every start (a create's several, the direct
 * path's) would cost about 17 ms more of the kernel's time.
 */
final class SpareExecs {

    private static final Logger log = LoggerFactory.getLogger(SpareExecs.class);
    /** Spare exec helpers kept ready per sandbox. */
    static final int SPARES = 2;
    /** Requests larger than this (huge argument lists) take the direct path. */
    static final int MAX_REQUEST = 256 * 1024;
    /** Spares that die before use this many times in a row are given up on for the sandbox (a broken perl, say). */
    private static final int GIVE_UP_AFTER = 3;
    /** How long spares wait for an exec before they are let go of, by default. */
    static final Duration IDLE = Duration.ofSeconds(30);

    /** A spare exec helper waiting for its request, with its pids group and where its command will be. */
    record Spare(
            Process process, OutputPipes.Readers output, ExecCgroup group, CompletableFuture<LocalProcess.Pids> pids) {
        /**
         * Ends the helper: at end-of-file instead of a request it exits (nsenter then follows), and its output's
         * read ends and its exec group go with it (a sandbox whose spares are let go of again and again would
         * otherwise gather descriptors and empty groups).
         */
        void discard() {
            try {
                process.getOutputStream().close();
            } catch (IOException e) {
                process.destroyForcibly();
            }
            process.onExit().thenRun(() -> {
                output.close();
                if (group != null && group.group() != null) {
                    group.group().removeIfEmpty();
                }
            });
        }
    }

    private final String sandboxId;
    private final Supplier<Spare> start;
    private final BooleanSupplier running;
    private final Executor helpers;
    private final ConcurrentLinkedDeque<CompletableFuture<Spare>> spares = new ConcurrentLinkedDeque<>();
    private final AtomicInteger dead = new AtomicInteger();
    private final AtomicLong execs = new AtomicLong();
    private final long idleNanos;
    /** When an exec last took a spare or ran, for {@link #IDLE}. */
    private final AtomicLong lastUse = new AtomicLong(System.nanoTime());

    private final AtomicBoolean releaseScheduled = new AtomicBoolean();
    private volatile boolean enabled;

    /**
     * @param sandboxId for messages
     * @param enabled   whether this sandbox can have spares at all
     * @param start     starts one spare, or returns null when it cannot (the sandbox is stopping, say)
     * @param running   whether the sandbox still runs
     * @param helpers   where spares are started
     * @param idle      how long spares wait for an exec before they are let go of
     */
    SpareExecs(
            String sandboxId,
            boolean enabled,
            Supplier<Spare> start,
            BooleanSupplier running,
            Executor helpers,
            Duration idle) {
        this.sandboxId = sandboxId;
        this.enabled = enabled;
        this.start = start;
        this.running = running;
        this.helpers = helpers;
        this.idleNanos = idle.toNanos();
    }

    /** Adds a helper started before this sandbox had its id (see {@link SandboxPool}); taken like any other. */
    void seed(CompletableFuture<Spare> spare) {
        if (enabled) {
            spares.addLast(spare);
            releaseWhenIdle(idleNanos);
        } else {
            spare.thenAccept(s -> {
                if (s != null) {
                    s.discard();
                }
            });
        }
    }

    /** Called after each exec: from the second on, spares are topped up once it is done or after a moment. */
    void afterExec(RuntimeProcess p) {
        lastUse.set(System.nanoTime());
        if (enabled && execs.incrementAndGet() >= 2) {
            // once this exec is done (or after a moment), so that starting them does not compete with it for the CPU
            CompletableFuture<Void> moment = CompletableFuture.runAsync(
                    () -> {}, CompletableFuture.delayedExecutor(50, TimeUnit.MILLISECONDS, helpers));
            CompletableFuture.anyOf(p.onExit(), moment).thenRunAsync(this::topUp, helpers);
        }
    }

    /**
     * Hands {@code request} (see {@link SandboxCommands#spareRequest}) to a spare that is ready and returns it, now
     * becoming the command; null when none is ready (waiting for one would be no faster than the direct path).
     */
    Spare take(byte[] request) {
        if (!enabled || request.length > MAX_REQUEST) {
            return null;
        }
        CompletableFuture<Spare> taken = null;
        for (CompletableFuture<Spare> f : spares) {
            // ready: started, and its command found (one still entering the sandbox is left for a later exec)
            Spare ready = f.isDone() && !f.isCompletedExceptionally() ? f.join() : null;
            boolean found = ready != null && ready.pids().isDone();
            if ((found || f.isDone() && ready == null) && spares.remove(f)) {
                taken = f;
                break;
            }
        }
        if (taken == null) {
            return null;
        }
        Spare s = taken.getNow(null);
        // the helper itself must still run (it may still be starting: it reads the request once it is up); the
        // host process alone is no proof, nsenter outlives a killed child for a moment, pipe and all
        LocalProcess.Pids pids = s == null ? null : s.pids().getNow(null);
        if (s == null || !s.process().isAlive() || pids == null || pids.host() <= 0 || !Procfs.running(pids.host())) {
            died(s);
            return null;
        }
        try {
            OutputStream in = s.process().getOutputStream();
            in.write(request);
            in.flush();
        } catch (IOException e) {
            died(s); // someone in the sandbox killed it; the direct path will do
            return null;
        }
        dead.set(0);
        return s;
    }

    private void died(Spare s) {
        if (s != null) {
            s.discard();
        }
        if (dead.incrementAndGet() >= GIVE_UP_AFTER && enabled) {
            enabled = false;
            log.warn("Spare exec helpers of sandbox {} keep failing; execs take the direct path", sandboxId);
        }
    }

    /** Starts spares in the background until {@link #SPARES} are ready or starting. */
    private void topUp() {
        while (enabled && running.getAsBoolean() && spares.size() < SPARES) {
            spares.addLast(CompletableFuture.supplyAsync(start, helpers));
        }
        releaseWhenIdle(idleNanos);
    }

    /** Lets go of the spares once no exec has come for {@link #idleNanos}, looking again in {@code delayNanos}. */
    private void releaseWhenIdle(long delayNanos) {
        if (releaseScheduled.compareAndSet(false, true)) {
            CompletableFuture.delayedExecutor(delayNanos, TimeUnit.NANOSECONDS, helpers)
                    .execute(() -> {
                        releaseScheduled.set(false);
                        long idle = System.nanoTime() - lastUse.get();
                        if (idle >= idleNanos) {
                            // the next two execs take the direct path again, as a fresh sandbox's do: a sandbox
                            // used now and then should not start two spares for each exec, to let them go unused
                            execs.set(0);
                            drop();
                        } else if (!spares.isEmpty()) {
                            releaseWhenIdle(idleNanos - idle);
                        }
                    });
        }
    }

    /** The spares kept, ready or starting; for tests. */
    int size() {
        return spares.size();
    }

    /** The spares ready to be taken (see {@link #take}); for tests. */
    int ready() {
        return (int) spares.stream()
                .filter(f -> f.isDone() && !f.isCompletedExceptionally())
                .map(f -> f.getNow(null))
                .filter(s -> s != null && s.pids().isDone())
                .count();
    }

    /** Ends every spare: the sandbox is stopping, or no exec came for a while. */
    void drop() {
        CompletableFuture<Spare> f;
        while ((f = spares.pollFirst()) != null) {
            f.thenAccept(s -> {
                if (s != null) {
                    s.discard();
                }
            });
        }
    }
}
