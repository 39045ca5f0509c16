package ai.chalk.compute.sandbox;

import ai.chalk.compute.error.ResourceKind;
import ai.chalk.compute.error.ServerCall;
import ai.chalk.compute.proto.sandbox.v2.AttachSession;
import ai.chalk.compute.proto.sandbox.v2.DetachSession;
import ai.chalk.compute.proto.sandbox.v2.NewProcess;
import ai.chalk.compute.proto.sandbox.v2.OpenSessionRequest;
import ai.chalk.compute.proto.sandbox.v2.OpenSessionResponse;
import ai.chalk.compute.proto.sandbox.v2.PtyInfo;
import ai.chalk.compute.proto.sandbox.v2.SandboxProcessServiceGrpc;
import ai.chalk.compute.proto.sandbox.v2.SessionSignal;
import ai.chalk.compute.proto.sandbox.v2.StdinData;
import ai.chalk.compute.proto.sandbox.v2.StdinEof;
import com.google.protobuf.ByteString;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import org.slf4j.LoggerFactory;

/**
 * A resumable process in a sandbox: it keeps running, and the server keeps its recent output, when this handle
 * detaches or its process (or machine) goes away, so another handle — in this process or another — can re-attach and
 * read on from where the last one stopped. Every event has a sequence number for that.
 *
 * <pre>{@code
 * Session build = sandbox.session(Command.shell("make all"));
 * String id = build.id();
 * Session.Event first = build.next().orElseThrow();
 * long seen = build.lastSeq();
 * build.detach();             // make keeps running
 * // later, anywhere with a client:
 * try (Session again = Session.attach(client, sandbox.id(), id, seen)) {
 *     ExecEvent.Exited end = again.awaitExit();
 * }
 * }</pre>
 *
 * <p>One thread reads a session's events; writing stdin and signals may come from others.
 */
public final class Session implements AutoCloseable {

    /**
     * One thing that happened in the session.
     *
     * @param seq   its sequence number: pass the last one read to {@link #attach} to read on after it
     * @param event what happened (output, or the process's exit)
     */
    public record Event(long seq, ExecEvent event) {
        /** Validates the event. */
        public Event {
            Objects.requireNonNull(event, "event");
        }
    }

    /** What the reading side gets: a response, the end of the stream, or its failure. */
    private sealed interface Item {}

    private record Response(OpenSessionResponse response) implements Item {}

    private record Ended() implements Item {}

    private record Failed(Throwable error) implements Item {}

    private final String sandboxId;
    private final BlockingQueue<Item> items = new LinkedBlockingQueue<>();
    private volatile ClientCallStreamObserver<OpenSessionRequest> requests;
    private String id;
    private long lastSeq;
    private boolean ended;

    private Session(String sandboxId) {
        this.sandboxId = sandboxId;
    }

    /** Starts {@code command} as a session and waits until the server has it. */
    static Session start(SandboxClient client, String sandboxId, Command command) {
        NewProcess.Builder process = NewProcess.newBuilder()
                .setSandboxId(sandboxId)
                .setCommand(command.command())
                .addAllArgs(command.args())
                .putAllEnvVars(command.env());
        command.workdir().ifPresent(process::setWorkdir);
        command.timeout()
                .ifPresent(t -> process.setTimeout(com.google.protobuf.Duration.newBuilder()
                        .setSeconds(t.getSeconds())
                        .setNanos(t.getNano())));
        command.pty()
                .ifPresent(p -> process.setPtyInfo(
                        PtyInfo.newBuilder().setCols(p.cols()).setRows(p.rows())));
        return open(
                client,
                sandboxId,
                OpenSessionRequest.newBuilder().setNewProcess(process).build());
    }

    /**
     * Re-attaches to a session, from any process with a client of the sandbox's environment, reading the events
     * after {@code afterSeq} (those the server still holds: it keeps a bounded amount of recent output, and says so
     * when some was dropped).
     *
     * @param client    the client
     * @param sandboxId the sandbox's id
     * @param sessionId the session's id ({@link #id()})
     * @param afterSeq  the sequence number of the last event already read ({@link #lastSeq()}), 0 for all
     * @return the attached session
     * @throws ai.chalk.compute.error.SandboxNotFoundException when the sandbox or session is unknown
     */
    public static Session attach(SandboxClient client, String sandboxId, String sessionId, long afterSeq) {
        Objects.requireNonNull(client, "client");
        Objects.requireNonNull(sandboxId, "sandboxId");
        Objects.requireNonNull(sessionId, "sessionId");
        if (afterSeq < 0) {
            throw new IllegalArgumentException("afterSeq must not be negative, got " + afterSeq);
        }
        return open(
                client,
                sandboxId,
                OpenSessionRequest.newBuilder()
                        .setAttachSession(AttachSession.newBuilder()
                                .setSandboxId(sandboxId)
                                .setSessionId(sessionId)
                                .setAfterSeq(afterSeq))
                        .build());
    }

    private static Session open(SandboxClient client, String sandboxId, OpenSessionRequest first) {
        Session session = new Session(sandboxId);
        SandboxProcessServiceGrpc.newStub(client.channel()).openSession(session.new Responses());
        session.requests.onNext(first);
        session.awaitAttached();
        return session;
    }

    /** Reads responses until SessionAttached, which gives the id (and the seq reading starts after). */
    private void awaitAttached() {
        while (id == null) {
            OpenSessionResponse r = take().orElseThrow(
                            () -> new IllegalStateException("the server ended the session stream before attaching it"));
            if (r.hasSessionAttached()) {
                id = r.getSessionAttached().getSessionId();
                lastSeq = r.getSeq();
            }
        }
    }

    /** The session's id, to re-attach with {@link #attach}. */
    public String id() {
        return id;
    }

    /** The id of the sandbox it runs in. */
    public String sandboxId() {
        return sandboxId;
    }

    /** The sequence number of the last event read (or where reading started): what to re-attach after. */
    public long lastSeq() {
        return lastSeq;
    }

    /**
     * The next event, waiting for it.
     *
     * @return the event; empty once the process has exited (after its exit event) or this handle detached
     * @throws ai.chalk.compute.error.ChalkComputeException when the server ended the stream with an error
     */
    public Optional<Event> next() {
        while (true) {
            Optional<OpenSessionResponse> taken = take();
            if (taken.isEmpty()) {
                return Optional.empty();
            }
            OpenSessionResponse r = taken.get();
            Optional<ExecEvent> event = toEvent(r);
            if (r.getSeq() > lastSeq) {
                lastSeq = r.getSeq();
            }
            if (event.isPresent()) {
                return Optional.of(new Event(r.getSeq(), event.get()));
            }
        }
    }

    /**
     * Reads on until the process exits, dropping its output.
     *
     * @return how it exited
     * @throws IllegalStateException when this handle detached before the exit
     */
    public ExecEvent.Exited awaitExit() {
        while (true) {
            Optional<Event> next = next();
            if (next.isEmpty()) {
                throw new IllegalStateException("session " + id + " was detached before its process exited");
            }
            if (next.get().event() instanceof ExecEvent.Exited exited) {
                return exited;
            }
        }
    }

    /**
     * Writes to the process's stdin.
     *
     * @param data the bytes
     */
    public void writeStdin(byte[] data) {
        send(OpenSessionRequest.newBuilder()
                .setStdinData(StdinData.newBuilder().setData(ByteString.copyFrom(data)))
                .build());
    }

    /** Closes the process's stdin: it reads end of file. */
    public void closeStdin() {
        send(OpenSessionRequest.newBuilder()
                .setStdinEof(StdinEof.getDefaultInstance())
                .build());
    }

    /**
     * Sends a signal to the process.
     *
     * @param signal the signal
     */
    public void signal(Signal signal) {
        send(OpenSessionRequest.newBuilder()
                .setSignal(SessionSignal.newBuilder().setSignal(signal.number()))
                .build());
    }

    /**
     * Stops reading: the process keeps running and the server keeps its output for a later {@link #attach}.
     * Events already on their way are dropped.
     */
    public void detach() {
        if (ended) {
            return;
        }
        send(OpenSessionRequest.newBuilder()
                .setDetachSession(DetachSession.getDefaultInstance())
                .build());
        while (take().isPresent()) {
            // drain to the server's SessionDetached and the end of the stream
        }
    }

    /** Detaches ({@link #detach()}); the process keeps running. */
    @Override
    public void close() {
        try {
            detach();
        } catch (RuntimeException e) {
            LoggerFactory.getLogger(Session.class).debug("detaching session {} failed: {}", id, e.toString());
            requests.cancel("session handle closed", null);
        }
    }

    private void send(OpenSessionRequest request) {
        synchronized (this) {
            requests.onNext(request);
        }
    }

    /** The next response, or empty at the end of the stream; the server's error as the SDK's exception. */
    private Optional<OpenSessionResponse> take() {
        if (ended) {
            return Optional.empty();
        }
        Item item;
        try {
            item = items.take();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            requests.cancel("interrupted", e);
            throw new IllegalStateException("interrupted while reading session " + id, e);
        }
        if (item instanceof Response r) {
            requests.request(1);
            return Optional.of(r.response());
        }
        ended = true;
        if (item instanceof Failed f) {
            throw ServerCall.failure(ResourceKind.SANDBOX, f.error());
        }
        return Optional.empty();
    }

    private static Optional<ExecEvent> toEvent(OpenSessionResponse r) {
        return switch (r.getEventCase()) {
            case OUTPUT_DATA -> {
                byte[] data = HandedOver.give(r.getOutputData().getData().toByteArray());
                yield Optional.of(
                        switch (r.getOutputData().getStream()) {
                            case STREAM_STDERR -> new ExecEvent.Stderr(data);
                            case STREAM_PTY_OUTPUT -> new ExecEvent.PtyOutput(data);
                            default -> new ExecEvent.Stdout(data);
                        });
            }
            case PROCESS_EXITED ->
                Optional.of(new ExecEvent.Exited(
                        r.getProcessExited().hasExitCode()
                                ? OptionalInt.of(r.getProcessExited().getExitCode())
                                : OptionalInt.empty(),
                        r.getProcessExited().hasSignal()
                                ? OptionalInt.of(r.getProcessExited().getSignal())
                                : OptionalInt.empty()));
            case PROCESS_TIMED_OUT ->
                Optional.of(new ExecEvent.Exited(
                        r.getProcessTimedOut().hasExitCode()
                                ? OptionalInt.of(r.getProcessTimedOut().getExitCode())
                                : OptionalInt.empty(),
                        r.getProcessTimedOut().hasSignal()
                                ? OptionalInt.of(r.getProcessTimedOut().getSignal())
                                : OptionalInt.empty()));
            case PROCESS_FAILED -> Optional.of(new ExecEvent.Exited(OptionalInt.empty(), OptionalInt.empty()));
            case ERROR -> {
                if ("OUTPUT_DROPPED".equals(r.getError().getCode())) {
                    LoggerFactory.getLogger(Session.class)
                            .warn("{}", r.getError().getMessage());
                }
                yield Optional.empty(); // other errors end the stream with their status, thrown by take()
            }
            default -> Optional.empty();
        };
    }

    /** Receives the stream, one message at a time as the reader takes them. */
    private final class Responses implements ClientResponseObserver<OpenSessionRequest, OpenSessionResponse> {
        @Override
        public void beforeStart(ClientCallStreamObserver<OpenSessionRequest> stream) {
            requests = stream;
            stream.disableAutoRequestWithInitial(1);
        }

        @Override
        public void onNext(OpenSessionResponse value) {
            items.add(new Response(value));
        }

        @Override
        public void onError(Throwable t) {
            items.add(new Failed(t));
        }

        @Override
        public void onCompleted() {
            items.add(new Ended());
        }
    }
}
