package ai.chalk.compute.server.session;

import ai.chalk.compute.proto.sandbox.v2.NewProcess;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.exec.EnvironmentBytes;
import ai.chalk.compute.server.sandbox.LiveSandbox;
import java.util.ArrayDeque;
import java.util.Collection;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The sessions of one sandbox; they end with it. Finished sessions stay readable (status and
 * buffered output) until {@link #KEPT_FINISHED} newer ones have finished, so a sandbox that runs
 * many commands does not hold every one's output for its whole life. At most {@link #MAX_RUNNING}
 * run at once per sandbox, and every session's buffer is reserved from the server-wide budget of
 * session output, so detached sessions cannot pile up without bound.
 */
public final class SessionRegistry implements AutoCloseable {

    /** The sessions of {@code sandbox}, closed when it ends. */
    public static SessionRegistry of(LiveSandbox sandbox) {
        return sandbox.attachment(SessionRegistry.class, SessionRegistry::new);
    }

    /** Ends every session: the sandbox is gone. */
    @Override
    public void close() {
        closeAll();
    }

    /** Finished sessions kept per sandbox; the oldest is forgotten when another finishes past it. */
    public static final int KEPT_FINISHED = 16;
    /** Sessions whose process still runs (attached or detached), per sandbox. */
    public static final int MAX_RUNNING = 32;

    private final Map<String, Session> sessions = new ConcurrentHashMap<>();
    private final Deque<Session> finished = new ArrayDeque<>(); // guarded by itself, oldest first
    private volatile boolean closed;

    /**
     * Registers a new session for {@code request}, reserving its buffer of {@code capacityBytes} from
     * {@code budget}. RESOURCE_EXHAUSTED when the sandbox already runs {@link #MAX_RUNNING} sessions or the
     * server's budget cannot take another buffer, saying what to do.
     */
    public Session create(NewProcess request, long capacityBytes, EnvironmentBytes.Account budget) {
        Session s;
        synchronized (finished) {
            if (closed) {
                throw ComputeException.refused(
                        "sandbox " + request.getSandboxId() + " is terminating; it cannot start processes");
            }
            // by the log itself, not by the finished list: a session's exit may reach its client (a drain sends it
            // as soon as it is logged) before the listener below files it, and the client's next session must not
            // be refused for it
            long running =
                    sessions.values().stream().filter(r -> !r.log().finished()).count();
            if (running >= MAX_RUNNING) {
                throw ComputeException.exhausted("sandbox " + request.getSandboxId() + " already runs "
                        + running + " sessions (attached or detached), the most one sandbox may: wait for one to"
                        + " finish, or attach to one and signal it, before opening another; ExecCommand runs a"
                        + " command without a session");
            }
            EnvironmentBytes.Refusal refusal = budget.tryReserve(capacityBytes);
            if (refusal != null) {
                throw ComputeException.exhausted("no room for this session's output (" + capacityBytes
                        + " bytes per session): " + budget.explain(refusal) + "; wait for sessions to finish, or run"
                        + " the command with ExecCommand or v1 Exec, which buffer nothing for later");
            }
            s = new Session(UUID.randomUUID().toString(), request, capacityBytes, budget);
            sessions.put(s.id(), s);
        }
        s.log().addListener(() -> {
            if (s.log().finished()) {
                finished(s);
            }
        });
        return s;
    }

    private void finished(Session s) {
        synchronized (finished) {
            if (finished.contains(s) || !sessions.containsKey(s.id())) {
                return;
            }
            finished.addLast(s);
            s.shrinkReservation();
            while (finished.size() > KEPT_FINISHED) {
                Session forgotten = finished.removeFirst();
                sessions.remove(forgotten.id());
                forgotten.releaseReservation();
            }
        }
    }

    /** Forgets a session whose process never started. */
    void remove(String id) {
        synchronized (finished) {
            Session s = sessions.remove(id);
            if (s != null) {
                s.releaseReservation();
            }
        }
    }

    /** The session with this id, or NOT_FOUND. */
    public Session require(String sandboxId, String sessionId) {
        Session s = sessionId == null ? null : sessions.get(sessionId);
        if (s == null) {
            throw ComputeException.notFound("session \"" + sessionId + "\" does not exist in sandbox " + sandboxId
                    + "; ListSessions shows the ones that do");
        }
        return s;
    }

    /** Every session, in no particular order. */
    public Collection<Session> all() {
        return List.copyOf(sessions.values());
    }

    /** Kills every session's process (the sandbox is going away) and gives back their buffers' reservations. */
    public void closeAll() {
        synchronized (finished) {
            closed = true;
        }
        sessions.values().forEach(Session::kill);
        synchronized (finished) {
            sessions.values().forEach(Session::releaseReservation);
            sessions.clear();
            finished.clear();
        }
    }
}
