package ai.chalk.compute.identity;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.proto.server.v1.AuthServiceGrpc;
import ai.chalk.compute.proto.server.v1.GetWorkloadIdentityTokenRequest;
import ai.chalk.compute.proto.server.v1.GetWorkloadIdentityTokenResponse;
import ai.chalk.compute.sandbox.SandboxClient;
import io.grpc.StatusRuntimeException;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;

/**
 * Asks the server who the calling code is, for third parties: {@link #getWorkloadIdentityToken(String)} returns an
 * OIDC token for one audience, scoped to the active environment, that the third party verifies with the server's
 * JWKS. Deployed code (a function, a sandbox with workload identity) needs no configuration; elsewhere it connects the
 * way {@link SandboxClient#fromEnv()} does.
 *
 * <pre>{@code
 * try (ConnectClient connect = ConnectClient.fromEnv()) {
 *     String jwt = connect.getWorkloadIdentityToken("snowflakecomputing.com").token();
 * }
 * }</pre>
 */
public final class ConnectClient implements AutoCloseable {

    private final SandboxClient client;
    private final boolean owned;

    private ConnectClient(SandboxClient client, boolean owned) {
        this.client = client;
        this.owned = owned;
    }

    /** Connects with the settings in the process environment, as {@link SandboxClient#fromEnv()} does. */
    public static ConnectClient fromEnv() {
        return new ConnectClient(SandboxClient.fromEnv(), true);
    }

    /** Connects with the settings in {@code env}, as {@link SandboxClient#fromEnv(Map)} does. */
    public static ConnectClient fromEnv(Map<String, String> env) {
        return new ConnectClient(SandboxClient.fromEnv(env), true);
    }

    /** Uses the connection of a client you have (closing this one leaves it open). */
    public static ConnectClient of(SandboxClient client) {
        return new ConnectClient(Objects.requireNonNull(client, "client"), false);
    }

    /**
     * An identity token for {@code audience}, valid for a few minutes: ask for a fresh one for each exchange.
     *
     * @param audience who the token is for, e.g. {@code sts.amazonaws.com} or {@code https://vault.example.com}
     * @throws ChalkComputeException when the server refuses (the caller has no identity, a blank audience) or cannot
     *                               be reached
     */
    public WorkloadIdentityToken getWorkloadIdentityToken(String audience) {
        Objects.requireNonNull(audience, "audience");
        GetWorkloadIdentityTokenResponse r;
        try {
            r = AuthServiceGrpc.newBlockingStub(client.channel())
                    .getWorkloadIdentityToken(GetWorkloadIdentityTokenRequest.newBuilder()
                            .setAudience(audience)
                            .build());
        } catch (StatusRuntimeException e) {
            throw ChalkComputeException.from(e);
        }
        return new WorkloadIdentityToken(
                r.getToken(),
                Instant.ofEpochSecond(
                        r.getExpiresAt().getSeconds(), r.getExpiresAt().getNanos()),
                r.getIssuer(),
                r.getSubject());
    }

    @Override
    public void close() {
        if (owned) {
            client.close();
        }
    }
}
