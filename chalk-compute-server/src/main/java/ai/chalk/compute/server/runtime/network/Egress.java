package ai.chalk.compute.server.runtime.network;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A sandbox's running egress: the slirp4netns process attached to its network namespace. Closing it ends the
 * process, and with it the sandbox's only way out; so does the end of the sandbox's process, or of the server
 * (setpriv gave slirp4netns a parent-death signal, which follows the thread that started it: the local runtime's
 * spawner, which lives as long as the runtime, or an image build step's own thread).
 */
public final class Egress implements AutoCloseable {

    private final long sandboxPid;
    private final Process slirp;
    private final AtomicBoolean closed = new AtomicBoolean();

    Egress(long sandboxPid, Process slirp) {
        this.sandboxPid = sandboxPid;
        this.slirp = slirp;
    }

    /** The host pid of the process whose network namespace this serves. */
    public long sandboxPid() {
        return sandboxPid;
    }

    /** The host pid of the slirp4netns process. */
    public long slirpPid() {
        return slirp.pid();
    }

    /** Whether slirp4netns still runs. */
    public boolean isAlive() {
        return slirp.isAlive();
    }

    /** Ends slirp4netns and waits for it; idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        slirp.destroy(); // SIGTERM: it leaves at once
        try {
            if (!slirp.waitFor(1, TimeUnit.SECONDS)) {
                slirp.destroyForcibly();
                slirp.waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            slirp.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
