package ai.chalk.compute.server.secret;

import ai.chalk.compute.proto.integrations.v1.DeleteIntegrationRequest;
import ai.chalk.compute.proto.integrations.v1.DeleteIntegrationResponse;
import ai.chalk.compute.proto.integrations.v1.IntegrationAdminServiceGrpc;
import ai.chalk.compute.proto.integrations.v1.PutIntegrationRequest;
import ai.chalk.compute.proto.integrations.v1.PutIntegrationResponse;
import ai.chalk.compute.proto.server.v1.IntegrationKind;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.grpc.StatusErrors;
import io.grpc.stub.StreamObserver;

/**
 * {@code chalk_compute.integrations.v1.IntegrationAdminService}: creates, replaces and deletes the integrations of the
 * caller's environment, which Chalk's contract only reads. Values are sealed like secrets' values.
 */
public final class IntegrationAdminServiceV1 extends IntegrationAdminServiceGrpc.IntegrationAdminServiceImplBase {

    private final Secrets secrets;

    public IntegrationAdminServiceV1(Secrets secrets) {
        this.secrets = secrets;
    }

    @Override
    public void putIntegration(PutIntegrationRequest request, StreamObserver<PutIntegrationResponse> observer) {
        StatusErrors.unary(observer, () -> {
            IntegrationKind kind = request.getKind() == IntegrationKind.UNRECOGNIZED
                    ? IntegrationKind.INTEGRATION_KIND_UNSPECIFIED
                    : request.getKind();
            return PutIntegrationResponse.newBuilder()
                    .setIntegration(IntegrationsServiceV1.proto(secrets.putIntegration(
                            environment(), request.getName(), kind.name(), request.getValuesMap())))
                    .build();
        });
    }

    @Override
    public void deleteIntegration(
            DeleteIntegrationRequest request, StreamObserver<DeleteIntegrationResponse> observer) {
        StatusErrors.unary(observer, () -> {
            secrets.deleteIntegration(environment(), request.getName());
            return DeleteIntegrationResponse.getDefaultInstance();
        });
    }

    private static String environment() {
        return Caller.current().environment();
    }
}
