package ai.chalk.compute.server.runtime.host;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;

/** SIGKILL to a host process and all its descendants, again and again until none is left (or 30 s passed). */
public final class ProcessTreeKill {

    private ProcessTreeKill() {}

    /**
     * Kills the tree below {@code root}, asked afresh each round (empty once the root is gone), until no process of
     * it runs any more or 30 seconds passed.
     */
    public static void kill(Supplier<Optional<ProcessHandle>> root) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            List<ProcessHandle> tree = new ArrayList<>();
            root.get().ifPresent(h -> {
                tree.add(h);
                h.descendants().forEach(tree::add);
            });
            tree.removeIf(h -> !h.isAlive() || !Procfs.running(h.pid()));
            if (tree.isEmpty()) {
                return;
            }
            for (ProcessHandle h : tree) {
                HostSignals.signal(h.pid(), 9);
            }
            LockSupport.parkNanos(1_000_000);
        }
    }
}
