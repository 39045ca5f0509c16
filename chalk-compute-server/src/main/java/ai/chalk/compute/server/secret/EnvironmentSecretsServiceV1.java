package ai.chalk.compute.server.secret;

import ai.chalk.compute.proto.server.v1.DeleteSecretRequest;
import ai.chalk.compute.proto.server.v1.DeleteSecretResponse;
import ai.chalk.compute.proto.server.v1.EnvironmentSecretsServiceGrpc;
import ai.chalk.compute.proto.server.v1.GetAllSecretValuesRequest;
import ai.chalk.compute.proto.server.v1.GetAllSecretValuesResponse;
import ai.chalk.compute.proto.server.v1.GetSecretValueRequest;
import ai.chalk.compute.proto.server.v1.GetSecretValueResponse;
import ai.chalk.compute.proto.server.v1.ListSecretsRequest;
import ai.chalk.compute.proto.server.v1.ListSecretsResponse;
import ai.chalk.compute.proto.server.v1.Secret;
import ai.chalk.compute.proto.server.v1.SecretScope;
import ai.chalk.compute.proto.server.v1.SecretScopeType;
import ai.chalk.compute.proto.server.v1.SecretSource;
import ai.chalk.compute.proto.server.v1.SecretValue;
import ai.chalk.compute.proto.server.v1.UpsertSecretRequest;
import ai.chalk.compute.proto.server.v1.UpsertSecretResponse;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.grpc.StatusErrors;
import com.google.protobuf.Timestamp;
import io.grpc.stub.StreamObserver;
import java.util.List;

/**
 * {@code chalk.server.v1.EnvironmentSecretsService}: the secrets of the caller's environment ({@link Caller}). Lists
 * show names and metadata; values are returned only by GetSecretValue and GetAllSecretValues. Secrets here are all
 * environment-wide and managed by this server (SECRET_SOURCE_MANAGED); a scope other than the environment is refused.
 */
public final class EnvironmentSecretsServiceV1 extends EnvironmentSecretsServiceGrpc.EnvironmentSecretsServiceImplBase {

    private final Secrets secrets;

    public EnvironmentSecretsServiceV1(Secrets secrets) {
        this.secrets = secrets;
    }

    /** Every secret of the environment; {@code include_scoped} changes nothing, as there are no scoped secrets. */
    @Override
    public void listSecrets(ListSecretsRequest request, StreamObserver<ListSecretsResponse> observer) {
        StatusErrors.unary(
                observer,
                () -> ListSecretsResponse.newBuilder()
                        .addAllSecrets(all(environment()))
                        .build());
    }

    /** The value of the secret with this id (a name is accepted too, as the SDK refers to secrets by name). */
    @Override
    public void getSecretValue(GetSecretValueRequest request, StreamObserver<GetSecretValueResponse> observer) {
        StatusErrors.unary(observer, () -> {
            String environment = environment();
            Secrets.SecretInfo info = secrets.find(environment, request.getId());
            return GetSecretValueResponse.newBuilder()
                    .setSecretValue(SecretValue.newBuilder()
                            .setName(info.name())
                            .setValue(secrets.value(environment, info.id()))
                            .setSource(SecretSource.SECRET_SOURCE_MANAGED))
                    .build();
        });
    }

    @Override
    public void getAllSecretValues(
            GetAllSecretValuesRequest request, StreamObserver<GetAllSecretValuesResponse> observer) {
        StatusErrors.unary(
                observer,
                () -> GetAllSecretValuesResponse.newBuilder()
                        .putAllValues(secrets.values(environment()))
                        .build());
    }

    /**
     * Sets a secret's value: {@code value}, or {@code config.literal}, or a copy of the secret {@code config.secret_id}
     * names. Answers with every secret of the environment, as after the change.
     */
    @Override
    public void upsertSecret(UpsertSecretRequest request, StreamObserver<UpsertSecretResponse> observer) {
        StatusErrors.unary(observer, () -> {
            String environment = environment();
            if (request.hasScope()) {
                environmentScope(request.getScope());
            }
            String value = request.getValue();
            switch (request.getConfig().getValueCase()) {
                case LITERAL -> value = oneValue(value, request.getConfig().getLiteral());
                case SECRET_ID ->
                    value = oneValue(
                            value,
                            secrets.value(environment, request.getConfig().getSecretId()));
                case VALUE_NOT_SET -> {}
            }
            secrets.upsert(environment, request.getName(), value);
            return UpsertSecretResponse.newBuilder()
                    .addAllSecrets(all(environment))
                    .build();
        });
    }

    /** Deletes a secret; NOT_FOUND when the environment has none of that name. Answers with the secrets left. */
    @Override
    public void deleteSecret(DeleteSecretRequest request, StreamObserver<DeleteSecretResponse> observer) {
        StatusErrors.unary(observer, () -> {
            String environment = environment();
            if (request.hasScope()) {
                environmentScope(request.getScope());
            }
            secrets.delete(environment, request.getName());
            return DeleteSecretResponse.newBuilder()
                    .addAllSecrets(all(environment))
                    .build();
        });
    }

    private static String oneValue(String value, String fromConfig) {
        if (!value.isEmpty()) {
            throw ComputeException.invalid("give the secret's value either in value or in config, not both");
        }
        return fromConfig;
    }

    /** Secrets here are environment-wide: a narrower scope would be silently broadened, so it is refused. */
    private static void environmentScope(SecretScope scope) {
        if (scope.getType() != SecretScopeType.SECRET_SCOPE_TYPE_UNSPECIFIED
                && scope.getType() != SecretScopeType.SECRET_SCOPE_TYPE_ENVIRONMENT) {
            throw ComputeException.refused("scope " + scope.getType() + ": this server keeps secrets per environment"
                    + " only, so a secret scoped to one sandbox, scaling group, function or notebook would be visible"
                    + " to the whole environment; leave scope unset (or SECRET_SCOPE_TYPE_ENVIRONMENT) and reference"
                    + " the secret only where it is needed");
        }
    }

    private List<Secret> all(String environment) {
        return secrets.list(environment).stream()
                .map(s -> proto(environment, s))
                .toList();
    }

    static Secret proto(String environment, Secrets.SecretInfo s) {
        return Secret.newBuilder()
                .setId(s.id())
                .setName(s.name())
                .setUpdatedAt(timestamp(s.updatedAt()))
                .setSource(SecretSource.SECRET_SOURCE_MANAGED)
                .setScope(SecretScope.newBuilder()
                        .setType(SecretScopeType.SECRET_SCOPE_TYPE_ENVIRONMENT)
                        .setRef(environment))
                .build();
    }

    static Timestamp timestamp(java.time.Instant at) {
        return Timestamp.newBuilder()
                .setSeconds(at.getEpochSecond())
                .setNanos(at.getNano())
                .build();
    }

    private static String environment() {
        return Caller.current().environment();
    }
}
