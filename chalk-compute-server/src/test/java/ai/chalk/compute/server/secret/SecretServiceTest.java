package ai.chalk.compute.server.secret;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import ai.chalk.compute.proto.integrations.v1.DeleteIntegrationRequest;
import ai.chalk.compute.proto.integrations.v1.IntegrationAdminServiceGrpc;
import ai.chalk.compute.proto.integrations.v1.PutIntegrationRequest;
import ai.chalk.compute.proto.server.v1.DeleteSecretRequest;
import ai.chalk.compute.proto.server.v1.EnvironmentSecretsServiceGrpc;
import ai.chalk.compute.proto.server.v1.GetAllSecretValuesRequest;
import ai.chalk.compute.proto.server.v1.GetEnvRequest;
import ai.chalk.compute.proto.server.v1.GetIntegrationValueRequest;
import ai.chalk.compute.proto.server.v1.GetSecretValueRequest;
import ai.chalk.compute.proto.server.v1.Integration;
import ai.chalk.compute.proto.server.v1.IntegrationKind;
import ai.chalk.compute.proto.server.v1.IntegrationWithSecrets;
import ai.chalk.compute.proto.server.v1.IntegrationsServiceGrpc;
import ai.chalk.compute.proto.server.v1.ListIntegrationsAndSecretsRequest;
import ai.chalk.compute.proto.server.v1.ListIntegrationsAndSecretsResponse;
import ai.chalk.compute.proto.server.v1.ListSecretsRequest;
import ai.chalk.compute.proto.server.v1.Secret;
import ai.chalk.compute.proto.server.v1.SecretConfigValue;
import ai.chalk.compute.proto.server.v1.SecretScope;
import ai.chalk.compute.proto.server.v1.SecretScopeType;
import ai.chalk.compute.proto.server.v1.SecretSource;
import ai.chalk.compute.proto.server.v1.SecretWithValue;
import ai.chalk.compute.proto.server.v1.TeamServiceGrpc;
import ai.chalk.compute.proto.server.v1.UpsertSecretRequest;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.auth.TrustedCallers;
import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.stub.MetadataUtils;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * EnvironmentSecretsService, IntegrationsService, IntegrationAdminService and TeamService.GetEnv against a real server,
 * over TCP and in-process, from clients of two environments ({@code dev} and {@code prod}) that must not see each
 * other's secrets or integrations.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SecretServiceTest {

    @TempDir
    static Path dataDir;

    private RunningServer server;
    private ManagedChannel inProcess;
    private Channel dev;
    private Channel prod;

    @BeforeAll
    void start() throws Exception {
        server = RunningServer.start(dataDir);
        inProcess =
                InProcessChannelBuilder.forName(server.server.inProcessName()).build();
        dev = RunningServer.authenticated(server.server, "dev"); // over TCP a credential of dev
        prod = inEnvironment(inProcess, "prod"); // the embedded transport acts in the environment it names too
    }

    @AfterAll
    void stop() throws Exception {
        inProcess.shutdownNow();
        server.close();
    }

    /** Every call naming {@code environment} (x-chalk-env-id), as a client configured for it sends. */
    static Channel inEnvironment(Channel channel, String environment) {
        Metadata headers = new Metadata();
        headers.put(TrustedCallers.ENVIRONMENT_HEADER, environment);
        return ClientInterceptors.intercept(channel, MetadataUtils.newAttachHeadersInterceptor(headers));
    }

    static EnvironmentSecretsServiceGrpc.EnvironmentSecretsServiceBlockingStub secrets(Channel c) {
        return EnvironmentSecretsServiceGrpc.newBlockingStub(c).withDeadlineAfter(30, TimeUnit.SECONDS);
    }

    static IntegrationsServiceGrpc.IntegrationsServiceBlockingStub integrations(Channel c) {
        return IntegrationsServiceGrpc.newBlockingStub(c).withDeadlineAfter(30, TimeUnit.SECONDS);
    }

    static IntegrationAdminServiceGrpc.IntegrationAdminServiceBlockingStub admin(Channel c) {
        return IntegrationAdminServiceGrpc.newBlockingStub(c).withDeadlineAfter(30, TimeUnit.SECONDS);
    }

    static Status.Code code(Supplier<?> call) {
        return status(call).getCode();
    }

    static Status status(Supplier<?> call) {
        StatusRuntimeException e = catchThrowableOfType(call::get, StatusRuntimeException.class);
        assertThat(e).as("the call fails").isNotNull();
        return e.getStatus();
    }

    static UpsertSecretRequest upsert(String name, String value) {
        return UpsertSecretRequest.newBuilder().setName(name).setValue(value).build();
    }

    @Test
    void twoEnvironmentsEachHaveTheirOwnSecretOfOneNameAndCannotReachTheOther() {
        List<Secret> devList =
                secrets(dev).upsertSecret(upsert("API_KEY", "dev-value-1")).getSecretsList();
        secrets(prod).upsertSecret(upsert("API_KEY", "prod-value-1"));
        secrets(prod).upsertSecret(upsert("ONLY_PROD", "prod-only"));

        assertThat(devList).extracting(Secret::getName).containsExactly("API_KEY");
        Secret devKey = devList.get(0);
        assertThat(devKey.getSource()).isEqualTo(SecretSource.SECRET_SOURCE_MANAGED);
        assertThat(devKey.getScope().getType()).isEqualTo(SecretScopeType.SECRET_SCOPE_TYPE_ENVIRONMENT);
        assertThat(devKey.getId()).isNotBlank();
        assertThat(devKey.toString()).doesNotContain("dev-value-1");
        List<Secret> prodList = secrets(prod)
                .listSecrets(ListSecretsRequest.getDefaultInstance())
                .getSecretsList();
        assertThat(prodList).extracting(Secret::getName).containsExactly("API_KEY", "ONLY_PROD");
        String prodOnlyId = prodList.get(1).getId();

        assertThat(secrets(dev)
                        .getSecretValue(GetSecretValueRequest.newBuilder()
                                .setId(devKey.getId())
                                .build())
                        .getSecretValue()
                        .getValue())
                .isEqualTo("dev-value-1");
        assertThat(secrets(dev)
                        .getSecretValue(GetSecretValueRequest.newBuilder()
                                .setId("API_KEY")
                                .build())
                        .getSecretValue()
                        .getValue())
                .as("by name, as the SDK asks")
                .isEqualTo("dev-value-1");
        assertThat(secrets(prod)
                        .getAllSecretValues(GetAllSecretValuesRequest.getDefaultInstance())
                        .getValuesMap())
                .isEqualTo(Map.of("API_KEY", "prod-value-1", "ONLY_PROD", "prod-only"));
        assertThat(secrets(dev)
                        .getAllSecretValues(GetAllSecretValuesRequest.getDefaultInstance())
                        .getValuesMap())
                .isEqualTo(Map.of("API_KEY", "dev-value-1"));

        // prod's secret, by id and by name, answers in dev exactly as one that never existed
        Status byId = status(() -> secrets(dev)
                .getSecretValue(
                        GetSecretValueRequest.newBuilder().setId(prodOnlyId).build()));
        Status unknown = status(() -> secrets(dev)
                .getSecretValue(GetSecretValueRequest.newBuilder()
                        .setId("sec_doesnotexist")
                        .build()));
        assertThat(byId.getCode()).isEqualTo(Status.Code.NOT_FOUND);
        assertThat(byId.getDescription()).isEqualTo(unknown.getDescription().replace("sec_doesnotexist", prodOnlyId));
        assertThat(code(() -> secrets(dev)
                        .getSecretValue(GetSecretValueRequest.newBuilder()
                                .setId("ONLY_PROD")
                                .build())))
                .isEqualTo(Status.Code.NOT_FOUND);
        assertThat(code(() -> secrets(dev)
                        .deleteSecret(DeleteSecretRequest.newBuilder()
                                .setName("ONLY_PROD")
                                .build())))
                .isEqualTo(Status.Code.NOT_FOUND);

        // a new value keeps the id; deleting in dev leaves prod's secret of the same name
        Secret updated =
                secrets(dev).upsertSecret(upsert("API_KEY", "dev-value-2")).getSecrets(0);
        assertThat(updated.getId()).isEqualTo(devKey.getId());
        assertThat(secrets(dev)
                        .getSecretValue(GetSecretValueRequest.newBuilder()
                                .setId("API_KEY")
                                .build())
                        .getSecretValue()
                        .getValue())
                .isEqualTo("dev-value-2");
        assertThat(secrets(dev)
                        .deleteSecret(DeleteSecretRequest.newBuilder()
                                .setName("API_KEY")
                                .build())
                        .getSecretsList())
                .isEmpty();
        assertThat(secrets(prod)
                        .getSecretValue(GetSecretValueRequest.newBuilder()
                                .setId("API_KEY")
                                .build())
                        .getSecretValue()
                        .getValue())
                .isEqualTo("prod-value-1");
    }

    @Test
    void aValueMayComeFromConfigAsALiteralOrAnotherSecretButNotFromBoth() {
        secrets(dev)
                .upsertSecret(UpsertSecretRequest.newBuilder()
                        .setName("FROM_LITERAL")
                        .setConfig(SecretConfigValue.newBuilder().setLiteral("literal-value"))
                        .build());
        secrets(dev)
                .upsertSecret(UpsertSecretRequest.newBuilder()
                        .setName("COPIED")
                        .setConfig(SecretConfigValue.newBuilder().setSecretId("FROM_LITERAL"))
                        .build());
        assertThat(secrets(dev)
                        .getSecretValue(GetSecretValueRequest.newBuilder()
                                .setId("COPIED")
                                .build())
                        .getSecretValue()
                        .getValue())
                .isEqualTo("literal-value");
        Status both = status(() -> secrets(dev)
                .upsertSecret(UpsertSecretRequest.newBuilder()
                        .setName("BOTH")
                        .setValue("x")
                        .setConfig(SecretConfigValue.newBuilder().setLiteral("y"))
                        .build()));
        assertThat(both.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        secrets(dev)
                .deleteSecret(
                        DeleteSecretRequest.newBuilder().setName("FROM_LITERAL").build());
        secrets(dev)
                .deleteSecret(DeleteSecretRequest.newBuilder().setName("COPIED").build());
    }

    @Test
    void namesFollowEnvironmentVariableRulesAndValuesAreAtMost64KiB() {
        for (String bad : List.of("", "1ABC", "A-B", "A B", "A=B", "x".repeat(256))) {
            Status s = status(() -> secrets(dev).upsertSecret(upsert(bad, "v")));
            assertThat(s.getCode()).as("name \"%s\"", bad).isEqualTo(Status.Code.INVALID_ARGUMENT);
            assertThat(s.getDescription()).contains("letters, digits and '_', not starting with a digit");
        }
        secrets(dev).upsertSecret(upsert("_ok_Name9", "v"));
        secrets(dev).upsertSecret(upsert("BIG_OK", "a".repeat(64 * 1024)));
        Status tooBig = status(() -> secrets(dev).upsertSecret(upsert("BIG", "b".repeat(64 * 1024 + 1))));
        assertThat(tooBig.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(tooBig.getDescription())
                .contains("65537 bytes", "at most 65536")
                .doesNotContain("bbbb");
        Status nul = status(() -> secrets(dev).upsertSecret(upsert("NUL", "a\0b")));
        assertThat(nul.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        secrets(dev)
                .deleteSecret(
                        DeleteSecretRequest.newBuilder().setName("_ok_Name9").build());
        secrets(dev)
                .deleteSecret(DeleteSecretRequest.newBuilder().setName("BIG_OK").build());
    }

    /**
     * A tenant saving secrets in a loop made every listing, every replica's start and every sandbox given all of them
     * read them whole: an environment now has at most 1,000 secrets (and apart 1,000 saved for local values), whose
     * values hold at most 16 MiB together, and past either a new one is refused; a new value of one it has is not, nor
     * are other environments' secrets.
     */
    @Test
    void anEnvironmentHoldsABoundedNumberOfSecretsAndOfBytes() {
        Channel many = inEnvironment(inProcess, "many-secrets");
        for (int i = 0; i < Secrets.MAX_SECRETS; i++) {
            secrets(many).upsertSecret(upsert("S" + i, "v"));
        }
        Status past = status(() -> secrets(many).upsertSecret(upsert("ONE_MORE", "v")));
        assertThat(past.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        assertThat(past.getDescription())
                .isEqualTo("this environment has 1000 secrets, the most it may have; delete some first");
        secrets(many).upsertSecret(upsert("S0", "changed"));
        // the secrets the SDK saves for local values are counted apart: an environment full of its own still deploys
        secrets(many).upsertSecret(upsert(LocalSecretSweep.PREFIX + "TOKEN_1a2b", "v"));
        secrets(prod).upsertSecret(upsert("ANOTHER_ENVIRONMENTS", "v"));

        Channel big = inEnvironment(inProcess, "big-secrets");
        String value = "x".repeat(Secrets.MAX_VALUE_BYTES);
        int saved = 0;
        Status full = null;
        while (full == null && saved < Secrets.MAX_SECRETS) {
            try {
                secrets(big).upsertSecret(upsert("B" + saved, value));
                saved++;
            } catch (StatusRuntimeException e) {
                full = e.getStatus();
            }
        }
        assertThat(full).as("a secret refused").isNotNull();
        assertThat(full.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        assertThat(full.getDescription())
                .startsWith("the values of this environment's secrets would hold ")
                .endsWith(" bytes (sealed), past the " + Secrets.MAX_ENVIRONMENT_BYTES
                        + " one environment may hold; delete some first");
        assertThat(saved).isBetween(200, 255);
        secrets(prod)
                .deleteSecret(DeleteSecretRequest.newBuilder()
                        .setName("ANOTHER_ENVIRONMENTS")
                        .build());
    }

    @Test
    void aScopeNarrowerThanTheEnvironmentIsRefusedRatherThanBroadened() {
        Status s = status(() -> secrets(dev)
                .upsertSecret(UpsertSecretRequest.newBuilder()
                        .setName("SCOPED")
                        .setValue("v")
                        .setScope(SecretScope.newBuilder()
                                .setType(SecretScopeType.SECRET_SCOPE_TYPE_SANDBOX)
                                .setRef("sb-1"))
                        .build()));
        assertThat(s.getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(s.getDescription()).contains("SECRET_SCOPE_TYPE_SANDBOX", "per environment only");
        secrets(dev)
                .upsertSecret(UpsertSecretRequest.newBuilder()
                        .setName("ENV_SCOPED")
                        .setValue("v")
                        .setScope(SecretScope.newBuilder().setType(SecretScopeType.SECRET_SCOPE_TYPE_ENVIRONMENT))
                        .build());
        secrets(dev)
                .deleteSecret(
                        DeleteSecretRequest.newBuilder().setName("ENV_SCOPED").build());
    }

    @Test
    void integrationValuesAreReadByIdOrNameInTheirEnvironmentOnly() {
        Integration pg = admin(dev)
                .putIntegration(PutIntegrationRequest.newBuilder()
                        .setName("pg")
                        .setKind(IntegrationKind.INTEGRATION_KIND_POSTGRESQL)
                        .putValues("PGUSER", "dev-user")
                        .putValues("PGPASSWORD", "dev-pg-password")
                        .build())
                .getIntegration();
        assertThat(pg.getName()).isEqualTo("pg");
        assertThat(pg.getEnvironmentId()).isEqualTo("dev");
        assertThat(pg.getKind()).isEqualTo(IntegrationKind.INTEGRATION_KIND_POSTGRESQL);
        assertThat(pg.toString()).doesNotContain("dev-pg-password");

        for (String ref : List.of(pg.getId(), "pg")) {
            assertThat(integrations(dev)
                            .getIntegrationValue(GetIntegrationValueRequest.newBuilder()
                                    .setIntegrationId(ref)
                                    .setSecretName("PGPASSWORD")
                                    .build())
                            .getSecretvalue()
                            .getValue())
                    .isEqualTo("dev-pg-password");
        }
        assertThat(code(() -> integrations(dev)
                        .getIntegrationValue(GetIntegrationValueRequest.newBuilder()
                                .setIntegrationId("pg")
                                .setSecretName("NOPE")
                                .build())))
                .isEqualTo(Status.Code.NOT_FOUND);
        assertThat(code(() -> integrations(prod)
                        .getIntegrationValue(GetIntegrationValueRequest.newBuilder()
                                .setIntegrationId(pg.getId())
                                .setSecretName("PGPASSWORD")
                                .build())))
                .isEqualTo(Status.Code.NOT_FOUND);
        assertThat(integrations(prod)
                        .listIntegrationsAndSecrets(ListIntegrationsAndSecretsRequest.newBuilder()
                                .setDecrypt(true)
                                .build())
                        .getIntegrationsList())
                .isEmpty();

        ListIntegrationsAndSecretsResponse hidden =
                integrations(dev).listIntegrationsAndSecrets(ListIntegrationsAndSecretsRequest.getDefaultInstance());
        assertThat(hidden.getIntegrationsList()).hasSize(1);
        IntegrationWithSecrets listed = hidden.getIntegrations(0);
        assertThat(listed.getSecretsList())
                .extracting(SecretWithValue::getName)
                .containsExactly("PGPASSWORD", "PGUSER");
        assertThat(listed.getSecretsList()).noneMatch(SecretWithValue::hasValue);
        assertThat(hidden.toString()).doesNotContain("dev-pg-password");
        ListIntegrationsAndSecretsResponse decrypted = integrations(dev)
                .listIntegrationsAndSecrets(ListIntegrationsAndSecretsRequest.newBuilder()
                        .setDecrypt(true)
                        .build());
        assertThat(decrypted.getIntegrations(0).getSecretsList())
                .extracting(SecretWithValue::getValue)
                .containsExactly("dev-pg-password", "dev-user");

        // put replaces every value: a key left out is gone
        admin(dev)
                .putIntegration(PutIntegrationRequest.newBuilder()
                        .setName("pg")
                        .setKind(IntegrationKind.INTEGRATION_KIND_POSTGRESQL)
                        .putValues("PGPASSWORD", "rotated")
                        .build());
        assertThat(code(() -> integrations(dev)
                        .getIntegrationValue(GetIntegrationValueRequest.newBuilder()
                                .setIntegrationId("pg")
                                .setSecretName("PGUSER")
                                .build())))
                .isEqualTo(Status.Code.NOT_FOUND);
        assertThat(code(() -> admin(prod)
                        .deleteIntegration(DeleteIntegrationRequest.newBuilder()
                                .setName("pg")
                                .build())))
                .isEqualTo(Status.Code.NOT_FOUND);
        admin(dev)
                .deleteIntegration(
                        DeleteIntegrationRequest.newBuilder().setName("pg").build());
        assertThat(code(() -> integrations(dev)
                        .getIntegrationValue(GetIntegrationValueRequest.newBuilder()
                                .setIntegrationId("pg")
                                .setSecretName("PGPASSWORD")
                                .build())))
                .isEqualTo(Status.Code.NOT_FOUND);
        assertThat(code(() -> admin(dev)
                        .putIntegration(PutIntegrationRequest.newBuilder()
                                .setName("bad name")
                                .build())))
                .isEqualTo(Status.Code.INVALID_ARGUMENT);
    }

    @Test
    void getEnvNamesTheCallersEnvironmentAndTheServersGrpcUrl() {
        var devEnv = TeamServiceGrpc.newBlockingStub(dev)
                .getEnv(GetEnvRequest.getDefaultInstance())
                .getEnvironment();
        assertThat(devEnv.getName()).isEqualTo("dev");
        assertThat(devEnv.getId()).isEqualTo("dev");
        assertThat(devEnv.getGrpcEngineUrl())
                .isEqualTo("http://127.0.0.1:" + server.server.port().getAsInt());
        assertThat(server.server.grpcUrl()).contains(devEnv.getGrpcEngineUrl());
        var prodEnv = TeamServiceGrpc.newBlockingStub(prod)
                .getEnv(GetEnvRequest.getDefaultInstance())
                .getEnvironment();
        assertThat(prodEnv.getId()).isEqualTo("prod");
        var defaultEnv = TeamServiceGrpc.newBlockingStub(server.channel)
                .getEnv(GetEnvRequest.getDefaultInstance())
                .getEnvironment();
        assertThat(defaultEnv.getId()).isEqualTo("default");
    }
}
