package ai.chalk.compute.server.secret;

import ai.chalk.compute.proto.server.v1.GetIntegrationValueRequest;
import ai.chalk.compute.proto.server.v1.GetIntegrationValueResponse;
import ai.chalk.compute.proto.server.v1.Integration;
import ai.chalk.compute.proto.server.v1.IntegrationKind;
import ai.chalk.compute.proto.server.v1.IntegrationWithSecrets;
import ai.chalk.compute.proto.server.v1.IntegrationsServiceGrpc;
import ai.chalk.compute.proto.server.v1.ListIntegrationsAndSecretsRequest;
import ai.chalk.compute.proto.server.v1.ListIntegrationsAndSecretsResponse;
import ai.chalk.compute.proto.server.v1.SecretSource;
import ai.chalk.compute.proto.server.v1.SecretValue;
import ai.chalk.compute.proto.server.v1.SecretWithValue;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.grpc.StatusErrors;
import ai.chalk.compute.server.store.SecretStore.IntegrationRecord;
import io.grpc.stub.StreamObserver;
import java.util.Map;

/**
 * {@code chalk.server.v1.IntegrationsService}: the integrations of the caller's environment and their values. An
 * integration's keys are listed as secrets named by the key, with {@code full_name} {@code <integration>.<key>}; values
 * only when the caller asks to {@code decrypt}. Integrations are made with {@code chalk_compute.integrations.v1}.
 */
public final class IntegrationsServiceV1 extends IntegrationsServiceGrpc.IntegrationsServiceImplBase {

    private final Secrets secrets;

    public IntegrationsServiceV1(Secrets secrets) {
        this.secrets = secrets;
    }

    @Override
    public void listIntegrationsAndSecrets(
            ListIntegrationsAndSecretsRequest request, StreamObserver<ListIntegrationsAndSecretsResponse> observer) {
        StatusErrors.unary(observer, () -> {
            String environment = environment();
            boolean decrypt = request.getDecrypt();
            ListIntegrationsAndSecretsResponse.Builder b = ListIntegrationsAndSecretsResponse.newBuilder();
            for (IntegrationRecord integration : secrets.integrations(environment)) {
                IntegrationWithSecrets.Builder i =
                        IntegrationWithSecrets.newBuilder().setIntegration(proto(integration));
                if (decrypt) {
                    secrets.integrationValues(integration)
                            .forEach((key, value) ->
                                    i.addSecrets(keyOf(integration, key).setValue(value)));
                } else {
                    secrets.integrationKeys(integration).forEach(key -> i.addSecrets(keyOf(integration, key)));
                }
                b.addIntegrations(i);
            }
            Map<String, String> values = decrypt ? secrets.values(environment) : Map.of();
            for (Secrets.SecretInfo s : secrets.list(environment)) {
                SecretWithValue.Builder c = SecretWithValue.newBuilder()
                        .setId(s.id())
                        .setName(s.name())
                        .setFullName(s.name())
                        .setUpdatedAt(EnvironmentSecretsServiceV1.timestamp(s.updatedAt()))
                        .setSource(SecretSource.SECRET_SOURCE_MANAGED);
                String value = values.get(s.name());
                if (value != null) {
                    c.setValue(value);
                }
                b.addCustomSecrets(c);
            }
            return b.build();
        });
    }

    /** One key of an integration, named by its id (or its name); NOT_FOUND for an unknown integration or key. */
    @Override
    public void getIntegrationValue(
            GetIntegrationValueRequest request, StreamObserver<GetIntegrationValueResponse> observer) {
        StatusErrors.unary(observer, () -> {
            IntegrationRecord integration = secrets.integration(environment(), request.getIntegrationId());
            return GetIntegrationValueResponse.newBuilder()
                    .setSecretvalue(SecretValue.newBuilder()
                            .setName(request.getSecretName())
                            .setValue(secrets.integrationValue(integration, request.getSecretName()))
                            .setSource(SecretSource.SECRET_SOURCE_MANAGED))
                    .build();
        });
    }

    private static SecretWithValue.Builder keyOf(IntegrationRecord integration, String key) {
        return SecretWithValue.newBuilder()
                .setId(integration.id() + "/" + key)
                .setName(key)
                .setFullName(integration.name() + "." + key)
                .setUpdatedAt(EnvironmentSecretsServiceV1.timestamp(integration.updatedAt()))
                .setSource(SecretSource.SECRET_SOURCE_MANAGED);
    }

    static Integration proto(IntegrationRecord r) {
        IntegrationKind kind;
        try {
            kind = IntegrationKind.valueOf(r.kind());
        } catch (IllegalArgumentException e) {
            kind = IntegrationKind.INTEGRATION_KIND_UNSPECIFIED;
        }
        return Integration.newBuilder()
                .setId(r.id())
                .setName(r.name())
                .setKind(kind)
                .setEnvironmentId(r.environment())
                .setCreatedAt(EnvironmentSecretsServiceV1.timestamp(r.createdAt()))
                .setUpdatedAt(EnvironmentSecretsServiceV1.timestamp(r.updatedAt()))
                .build();
    }

    private static String environment() {
        return Caller.current().environment();
    }
}
