package ai.chalk.compute.server.session;

import ai.chalk.compute.proto.sandbox.v2.NewProcess;
import io.grpc.Status;
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
 * many commands does not hold every one's output for its whole life.
 */
public final class SessionRegistry {

    /** Finished sessions kept per sandbox; the oldest is forgotten when another finishes past it. */
    public static final int KEPT_FINISHED = 16;

    private final Map<String, Session> sessions = new ConcurrentHashMap<>();
    private final Deque<Session> finished = new ArrayDeque<>(); // guarded by itself, oldest first
    private volatile boolean closed;

    /** Registers a new session for {@code request}. */
    public Session create(NewProcess request, long capacityBytes) {
        if (closed) {
            throw Status.FAILED_PRECONDITION.withDescription("sandbox " + request.getSandboxId()
                    + " is terminating; it cannot start processes").asRuntimeException();
        }
        Session s = new Session(UUID.randomUUID().toString(), request, capacityBytes);
        sessions.put(s.id(), s);
        s.log().addListener(() -> {
            if (s.log().finished()) {
                finished(s);
            }
        });
        return s;
    }

    private void finished(Session s) {
        synchronized (finished) {
            if (finished.contains(s)) {
                return;
            }
            finished.addLast(s);
            while (finished.size() > KEPT_FINISHED) {
                sessions.remove(finished.removeFirst().id());
            }
        }
    }

    /** Forgets a session whose process never started. */
    void remove(String id) {
        sessions.remove(id);
    }

    /** The session with this id, or NOT_FOUND. */
    public Session require(String sandboxId, String sessionId) {
        Session s = sessionId == null ? null : sessions.get(sessionId);
        if (s == null) {
            throw Status.NOT_FOUND.withDescription("session \"" + sessionId + "\" does not exist in sandbox "
                    + sandboxId + "; ListSessions shows the ones that do").asRuntimeException();
        }
        return s;
    }

    /** Every session, in no particular order. */
    public Collection<Session> all() {
        return List.copyOf(sessions.values());
    }

    /** Kills every session's process (the sandbox is going away). */
    public void closeAll() {
        closed = true;
        sessions.values().forEach(Session::kill);
    }
}
