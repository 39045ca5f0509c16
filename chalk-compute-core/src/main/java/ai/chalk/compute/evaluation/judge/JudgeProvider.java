package ai.chalk.compute.evaluation.judge;

import ai.chalk.compute.secret.Secret;
import io.grpc.Channel;
import io.grpc.Status;
import org.jspecify.annotations.Nullable;

/**
 * Where a judge sends its requests: {@code baseUrl} (OpenAI's API when only a key is given) with the API key read
 * from {@code apiKey} where the judge runs: a local variable from this process, a Chalk secret from the variable of
 * that name, which is how a workload deployed with the secret receives it.
 *
 * @param baseUrl an OpenAI-compatible base URL, or null
 * @param apiKey  the key's secret, or null
 * @param router  the channel to the server whose AI router a judge with neither uses; null for the server the
 *                environment names ({@code SandboxClient.fromEnv()})
 */
record JudgeProvider(
        @Nullable String baseUrl,
        @Nullable Secret apiKey,
        @Nullable Channel router) {

    static final String OPENAI = "https://api.openai.com/v1";

    JudgeProvider {
        if (apiKey != null && !(apiKey instanceof Secret.ChalkEnv) && !(apiKey instanceof Secret.LocalEnv)) {
            throw new IllegalArgumentException("a judge's apiKey is one value: Secret.fromChalkEnv(name) or "
                    + "Secret.fromLocalEnv(variable), not " + apiKey);
        }
        if (baseUrl != null) {
            ChatCompletions.endpoint(baseUrl); // checks the URL now rather than at the first row
        }
    }

    JudgeProvider(@Nullable String baseUrl, @Nullable Secret apiKey) {
        this(baseUrl, apiKey, null);
    }

    /**
     * Writes where the judge's requests go into a judge's spec: the base URL, and whether it has a key, which
     * travels as the deployment's secret, never in the spec.
     */
    void describe(com.fasterxml.jackson.databind.node.ObjectNode spec) {
        if (baseUrl != null) {
            spec.put("base_url", baseUrl);
        }
        spec.put("api_key", apiKey != null);
    }

    ChatCompletions connect() {
        if (baseUrl == null && apiKey == null) {
            return new ChatCompletions(new RouterTransport(router != null ? router : EnvironmentServer.channel()));
        }
        return new ChatCompletions(baseUrl != null ? baseUrl : OPENAI, apiKey == null ? null : key(apiKey));
    }

    private static String key(Secret secret) {
        String variable = secret instanceof Secret.ChalkEnv env ? env.name() : ((Secret.LocalEnv) secret).variable();
        String value = System.getenv(variable);
        if (value == null || value.isEmpty()) {
            throw new JudgeException(
                    Status.Code.FAILED_PRECONDITION,
                    secret instanceof Secret.ChalkEnv
                            ? "the judge's API key secret " + variable
                                    + " is not in this process's environment: deploy "
                                    + "what runs the judge with the secret (Secret.fromChalkEnv(\"" + variable + "\"))"
                            : "the judge's API key variable " + variable + " is not set");
        }
        return value;
    }
}
