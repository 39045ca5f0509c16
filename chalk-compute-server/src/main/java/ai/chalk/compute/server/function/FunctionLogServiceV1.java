package ai.chalk.compute.server.function;

import ai.chalk.compute.proto.common.v1.LogEntry;
import ai.chalk.compute.proto.function.v1.FunctionLogServiceGrpc;
import ai.chalk.compute.proto.function.v1.GetFunctionLogsRequest;
import ai.chalk.compute.proto.function.v1.GetFunctionLogsResponse;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.grpc.StatusErrors;
import ai.chalk.compute.server.worker.FunctionLogs;
import com.google.protobuf.Timestamp;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.time.Instant;
import java.util.Optional;

/**
 * {@code chalk_compute.function.v1.FunctionLogService}: the recent output of a function of the caller's environment
 * ({@link Caller}); another environment's function answers NOT_FOUND as an unknown one.
 */
public final class FunctionLogServiceV1 extends FunctionLogServiceGrpc.FunctionLogServiceImplBase {

    /** Lines answered when the request names no limit. */
    static final int DEFAULT_LIMIT = 100;

    private final FunctionDeployments deployments;
    private final FunctionLogs logs;

    public FunctionLogServiceV1(FunctionDeployments deployments, FunctionLogs logs) {
        this.deployments = deployments;
        this.logs = logs;
    }

    @Override
    public void getFunctionLogs(GetFunctionLogsRequest request, StreamObserver<GetFunctionLogsResponse> observer) {
        StatusErrors.unary(observer, () -> {
            String environment = Caller.current().environment();
            String name = deployments
                    .function(environment, "", request.getFunctionName(), false)
                    .name();
            int limit = request.getLimit();
            if (limit < 0 || limit > FunctionLogs.LINES_PER_FUNCTION) {
                throw Status.INVALID_ARGUMENT
                        .withDescription("limit must be between 1 and " + FunctionLogs.LINES_PER_FUNCTION + " (0 for "
                                + DEFAULT_LIMIT + "), got " + limit)
                        .asRuntimeException();
            }
            Optional<Instant> since = request.hasStartTime()
                    ? Optional.of(Instant.ofEpochSecond(
                            request.getStartTime().getSeconds(),
                            request.getStartTime().getNanos()))
                    : Optional.empty();
            GetFunctionLogsResponse.Builder b = GetFunctionLogsResponse.newBuilder();
            for (FunctionLogs.Line line : logs.recent(environment, name, limit == 0 ? DEFAULT_LIMIT : limit, since)) {
                LogEntry.Builder entry = LogEntry.newBuilder()
                        .setId(Long.toString(line.id()))
                        .setTimestamp(Timestamp.newBuilder()
                                .setSeconds(line.time().getEpochSecond())
                                .setNanos(line.time().getNano()))
                        .setMessage(line.text())
                        .putLabels("replica", line.replica())
                        .putLabels("stream", line.stream());
                line.function().ifPresent(f -> entry.putLabels("function", f));
                b.addLogs(entry);
            }
            return b.build();
        });
    }
}
