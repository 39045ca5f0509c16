package ai.chalk.compute.server.runtime.host;

import com.sun.jna.LastErrorException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;

/**
 * Renames a running sandbox's host: one thread of its own joins the sandbox's UTS namespace, sets the name and joins
 * its own namespace again, all in-process (a pre-started sandbox gets the name of the sandbox it becomes without a
 * process spawned for it). Only that thread ever leaves the server's UTS namespace; should it fail to return, it is
 * never used again and every later rename fails.
 */
public final class SandboxHostnames implements AutoCloseable {

    private final ExecutorService thread = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "chalk-local-hostnames");
        t.setDaemon(true);
        return t;
    });
    /** The server's own UTS namespace, opened by the thread itself; -1 until then or after a failed return. */
    private int home = -1;

    private volatile boolean broken;

    /**
     * Sets the host name of the sandbox whose init is host process {@code initPid}.
     *
     * @throws IOException when this host does not allow it (no {@code CAP_SYS_ADMIN}, the init is gone)
     */
    public void set(long initPid, String hostname) throws IOException {
        if (broken) {
            throw new IOException("sandbox host names cannot be changed: an earlier rename failed to return");
        }
        try {
            thread.submit(() -> {
                        rename(initPid, hostname);
                        return null;
                    })
                    .get();
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof IOException io) {
                throw io;
            }
            throw new IOException("cannot set the host name of sandbox init " + initPid + ": " + cause, cause);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while naming a sandbox's host", e);
        } catch (RejectedExecutionException e) {
            throw new IOException("the runtime is shut down", e);
        }
    }

    /** Runs on the one thread. */
    private void rename(long initPid, String hostname) throws IOException {
        UtsCalls c = UtsCalls.INSTANCE;
        if (home < 0) {
            home = open(c, "/proc/thread-self/ns/uts");
        }
        int target = open(c, "/proc/" + initPid + "/ns/uts");
        try {
            c.setns(target, UtsCalls.CLONE_NEWUTS);
            try {
                byte[] name = hostname.getBytes(StandardCharsets.US_ASCII);
                c.sethostname(name, name.length);
            } finally {
                try {
                    c.setns(home, UtsCalls.CLONE_NEWUTS);
                } catch (LastErrorException e) {
                    broken = true; // this thread now sits in a sandbox's namespace: never use it again
                    throw new IOException("cannot return from sandbox init " + initPid + "'s UTS namespace: errno "
                            + e.getErrorCode());
                }
            }
        } catch (LastErrorException e) {
            throw new IOException(
                    "cannot set the host name of sandbox init " + initPid + ": errno " + e.getErrorCode());
        } finally {
            c.close(target);
        }
    }

    private static int open(UtsCalls c, String path) throws IOException {
        try {
            return c.open(path, UtsCalls.O_RDONLY | UtsCalls.O_CLOEXEC);
        } catch (LastErrorException e) {
            throw new IOException("cannot open " + path + ": errno " + e.getErrorCode());
        }
    }

    @Override
    public void close() {
        thread.execute(() -> {
            if (home >= 0) {
                UtsCalls.INSTANCE.close(home);
                home = -1;
            }
        });
        thread.shutdown();
    }
}
