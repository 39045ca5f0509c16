package ai.chalk.compute.server.session;

import ai.chalk.compute.proto.sandbox.v2.NewProcess;
import io.grpc.Status;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/** The sessions of one sandbox; they end with it. */
public final class SessionRegistry {

    private final Map<String, Session> sessions = new ConcurrentHashMap<>();
    private volatile boolean closed;

    /** Registers a new session for {@code request}. */
    public Session create(NewProcess request, long capacityBytes) {
        if (closed) {
            throw Status.FAILED_PRECONDITION.withDescription("sandbox " + request.getSandboxId()
                    + " is terminating; it cannot start processes").asRuntimeException();
        }
        Session s = new Session(UUID.randomUUID().toString(), request, capacityBytes);
        sessions.put(s.id(), s);
        return s;
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
