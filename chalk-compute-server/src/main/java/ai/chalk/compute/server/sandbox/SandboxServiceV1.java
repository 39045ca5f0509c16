package ai.chalk.compute.server.sandbox;

import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.CreateSandboxResponse;
import ai.chalk.compute.proto.sandbox.v1.ExecRequest;
import ai.chalk.compute.proto.sandbox.v1.ExecResponse;
import ai.chalk.compute.proto.sandbox.v1.GetSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.GetSandboxResponse;
import ai.chalk.compute.proto.sandbox.v1.ListSandboxesRequest;
import ai.chalk.compute.proto.sandbox.v1.ListSandboxesResponse;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import ai.chalk.compute.proto.sandbox.v1.TerminateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.TerminateSandboxResponse;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.exec.EnvironmentBytes;
import ai.chalk.compute.server.exec.ProcessThreads;
import ai.chalk.compute.server.grpc.StatusErrors;
import ai.chalk.compute.server.store.SandboxRecord;
import ai.chalk.compute.server.store.SandboxState;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * {@code chalk.sandbox.v1.SandboxService}: create, get, list, terminate and exec, each in the caller's environment
 * ({@link Caller}): a sandbox of another environment answers NOT_FOUND, as one that does not exist.
 */
public final class SandboxServiceV1 extends SandboxServiceGrpc.SandboxServiceImplBase {

    static final int DEFAULT_PAGE = 100;
    static final int MAX_PAGE = 1000;
    static final Duration DEFAULT_GRACE = Duration.ofSeconds(5);
    static final Duration MAX_GRACE = Duration.ofMinutes(10);

    private final SandboxManager sandboxes;
    private final ProcessThreads threads;
    private final EnvironmentBytes stdinBudget;

    /** @param stdinBudget the server-wide bound on stdin received and not yet read by its process, shared by environments */
    public SandboxServiceV1(SandboxManager sandboxes, ProcessThreads threads, EnvironmentBytes stdinBudget) {
        this.sandboxes = sandboxes;
        this.threads = threads;
        this.stdinBudget = stdinBudget;
    }

    @Override
    public void createSandbox(CreateSandboxRequest request, StreamObserver<CreateSandboxResponse> observer) {
        StatusErrors.unary(
                observer,
                () -> CreateSandboxResponse.newBuilder()
                        .setSandbox(SandboxInfos.v1(sandboxes.create(environment(), request)))
                        .build());
    }

    @Override
    public void getSandbox(GetSandboxRequest request, StreamObserver<GetSandboxResponse> observer) {
        StatusErrors.unary(observer, () -> {
            SandboxRecord record = sandboxes.get(environment(), request.getSandboxId());
            if (record.state().finished() && !request.getIncludeTerminated()) {
                throw Status.NOT_FOUND
                        .withDescription("sandbox " + record.id() + " is " + record.state()
                                + "; set include_terminated to see finished sandboxes")
                        .asRuntimeException();
            }
            return GetSandboxResponse.newBuilder()
                    .setSandbox(SandboxInfos.v1(record))
                    .build();
        });
    }

    @Override
    public void listSandboxes(ListSandboxesRequest request, StreamObserver<ListSandboxesResponse> observer) {
        StatusErrors.unary(observer, () -> {
            int limit = request.hasLimit() ? request.getLimit() : DEFAULT_PAGE;
            if (limit <= 0 || limit > MAX_PAGE) {
                throw Status.INVALID_ARGUMENT
                        .withDescription("limit " + limit + " is out of range: give 1 to " + MAX_PAGE
                                + ", or omit it for " + DEFAULT_PAGE)
                        .asRuntimeException();
            }
            long after = cursor(request);
            List<SandboxState> states = states("states", request.getStatesList());
            List<SandboxState> notStates = new ArrayList<>(states("not_states", request.getNotStatesList()));
            if (!request.getIncludeTerminated() && states.stream().noneMatch(SandboxState::finished)) {
                notStates.add(SandboxState.TERMINATED);
                notStates.add(SandboxState.FAILED);
            }
            List<SandboxRecord> page = sandboxes.list(environment(), after, limit + 1, states, notStates);
            ListSandboxesResponse.Builder b = ListSandboxesResponse.newBuilder();
            page.stream().limit(limit).forEach(r -> b.addSandboxes(SandboxInfos.v1(r)));
            if (page.size() > limit) {
                b.setNextCursor(Long.toString(page.get(limit - 1).seq()));
            }
            return b.build();
        });
    }

    private static long cursor(ListSandboxesRequest request) {
        if (!request.hasCursor() || request.getCursor().isEmpty()) {
            return 0;
        }
        try {
            return Long.parseLong(request.getCursor());
        } catch (NumberFormatException e) {
            throw Status.INVALID_ARGUMENT
                    .withDescription("cursor \"" + request.getCursor()
                            + "\" is not one this server returned: pass next_cursor from a previous response")
                    .asRuntimeException();
        }
    }

    private static List<SandboxState> states(String field, List<String> names) {
        List<SandboxState> out = new ArrayList<>();
        for (String name : names) {
            try {
                out.add(SandboxState.valueOf(name.trim().toUpperCase(Locale.ROOT)));
            } catch (IllegalArgumentException e) {
                throw Status.INVALID_ARGUMENT
                        .withDescription(field + " has unknown state \"" + name + "\"; states are "
                                + Arrays.toString(SandboxState.values()))
                        .asRuntimeException();
            }
        }
        return out;
    }

    @Override
    public void terminateSandbox(TerminateSandboxRequest request, StreamObserver<TerminateSandboxResponse> observer) {
        StatusErrors.unary(observer, () -> {
            Duration grace = DEFAULT_GRACE;
            if (request.hasGracePeriodSeconds()) {
                if (request.getGracePeriodSeconds() < 0) {
                    throw Status.INVALID_ARGUMENT
                            .withDescription("grace_period_seconds must not be negative")
                            .asRuntimeException();
                }
                grace = Duration.ofSeconds(request.getGracePeriodSeconds());
                if (grace.compareTo(MAX_GRACE) > 0) {
                    throw Status.INVALID_ARGUMENT
                            .withDescription("grace_period_seconds is at most " + MAX_GRACE.toSeconds())
                            .asRuntimeException();
                }
            }
            sandboxes.terminate(environment(), request.getSandboxId(), grace, "requested by a client");
            return TerminateSandboxResponse.getDefaultInstance();
        });
    }

    @Override
    public StreamObserver<ExecRequest> exec(StreamObserver<ExecResponse> observer) {
        return new ExecCall(
                sandboxes, environment(), threads, (ServerCallStreamObserver<ExecResponse>) observer, stdinBudget);
    }

    /** The environment the call acts in. */
    static String environment() {
        return Caller.current().environment();
    }
}
