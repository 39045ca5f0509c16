package ai.chalk.compute.server.info;

import ai.chalk.compute.proto.serverinfo.v1.GetServerInfoRequest;
import ai.chalk.compute.proto.serverinfo.v1.GetServerInfoResponse;
import ai.chalk.compute.proto.serverinfo.v1.ServerInfoServiceGrpc;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.grpc.StatusErrors;
import ai.chalk.compute.server.runtime.Isolation;
import ai.chalk.compute.server.store.SandboxState;
import io.grpc.stub.StreamObserver;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.IntSupplier;
import java.util.function.Supplier;

/**
 * {@code chalk_compute.serverinfo.v1.ServerInfoService}: the runtime, the isolation in force and the caller's
 * environment's sandboxes by state, as the embedded server's health details show them. Another environment's
 * sandboxes are not counted: how busy other tenants are is theirs to know.
 */
public final class ServerInfoServiceV1 extends ServerInfoServiceGrpc.ServerInfoServiceImplBase {

    private final String runtime;
    private final Supplier<Isolation> isolation;
    private final Function<String, Map<SandboxState, Long>> sandboxCounts;
    private final IntSupplier pooled;

    /**
     * @param runtime       the runtime's name
     * @param isolation     the isolation in force, asked at each call
     * @param sandboxCounts an environment's sandboxes by state
     * @param pooled        the runtime's sandboxes started ahead of time, waiting for creates
     */
    public ServerInfoServiceV1(
            String runtime,
            Supplier<Isolation> isolation,
            Function<String, Map<SandboxState, Long>> sandboxCounts,
            IntSupplier pooled) {
        this.runtime = Objects.requireNonNull(runtime, "runtime");
        this.isolation = Objects.requireNonNull(isolation, "isolation");
        this.sandboxCounts = Objects.requireNonNull(sandboxCounts, "sandboxCounts");
        this.pooled = Objects.requireNonNull(pooled, "pooled");
    }

    @Override
    public void getServerInfo(GetServerInfoRequest request, StreamObserver<GetServerInfoResponse> observer) {
        StatusErrors.unary(observer, () -> {
            Isolation in = isolation.get();
            GetServerInfoResponse.Builder response = GetServerInfoResponse.newBuilder()
                    .setRuntime(runtime)
                    .setIsolation(in.level())
                    .setIsolationDetail(in.detail())
                    .setPooledSandboxes(pooled.getAsInt());
            sandboxCounts
                    .apply(Caller.current().environment())
                    .forEach((state, count) -> response.putSandboxes(state.name(), count));
            return response.build();
        });
    }
}
