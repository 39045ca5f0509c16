package ai.chalk.compute.server.team;

import ai.chalk.compute.proto.server.v1.Environment;
import ai.chalk.compute.proto.server.v1.GetEnvRequest;
import ai.chalk.compute.proto.server.v1.GetEnvResponse;
import ai.chalk.compute.proto.server.v1.TeamServiceGrpc;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.grpc.StatusErrors;
import io.grpc.stub.StreamObserver;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * {@code chalk.server.v1.TeamService}: GetEnv answers with the caller's environment. An environment here is named by
 * its id, so {@code name} and {@code id} are the same; {@code grpc_engine_url} is this server's own TCP address (the
 * one server is every environment's engine), unset when it serves in-process only and for workloads, which reach the
 * server through their socket only (their sandbox has no route to the TCP port): unset means "the endpoint you asked".
 */
public final class TeamServiceV1 extends TeamServiceGrpc.TeamServiceImplBase {

    private final Supplier<Optional<String>> grpcUrl;

    /** @param grpcUrl the server's URL for TCP clients, once it listens */
    public TeamServiceV1(Supplier<Optional<String>> grpcUrl) {
        this.grpcUrl = grpcUrl;
    }

    @Override
    public void getEnv(GetEnvRequest request, StreamObserver<GetEnvResponse> observer) {
        StatusErrors.unary(observer, () -> {
            Caller caller = Caller.current();
            String environment = caller.environment();
            Environment.Builder e =
                    Environment.newBuilder().setName(environment).setId(environment);
            if (caller.kind() != Caller.Kind.WORKLOAD) {
                grpcUrl.get().ifPresent(e::setGrpcEngineUrl);
            }
            return GetEnvResponse.newBuilder().setEnvironment(e).build();
        });
    }
}
