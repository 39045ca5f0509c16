package ai.chalk.compute.evaluation.judge;

import ai.chalk.compute.evaluation.EvaluationScorerResult;
import ai.chalk.compute.evaluation.Scorer;
import ai.chalk.compute.function.DeploymentOptions;
import ai.chalk.compute.function.FunctionDefinition;
import ai.chalk.compute.function.FunctionRegistry;
import ai.chalk.compute.function.catalog.FunctionVersion;
import ai.chalk.compute.function.deploy.CodeSnapshot;
import ai.chalk.compute.function.deploy.FunctionDeployer;
import ai.chalk.compute.function.deploy.WorkerMode;
import ai.chalk.compute.network.NetworkPolicy;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.secret.Secret;
import ai.chalk.compute.secret.SecretBindings;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.grpc.Channel;
import java.lang.reflect.Method;
import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An LLM judge deployed as a scorer function, as the SDK's {@code llm_judge} deploys one: a judge given directly to
 * {@code Evaluation.create} becomes the function of its name ({@code trace-quality}), versioned like any other (an
 * unchanged judge reuses its version), whose replicas run the judge itself on the function workers. The judge travels
 * as a JSON description in the replica's environment ({@value #SPEC_ENV}); the grade record travels with the class
 * path snapshot; a provider key given with {@code apiKey(Secret)} travels as the deployment's secret
 * ({@value #KEY_ENV}), never in the function's configuration, and its replicas may reach the provider's host and
 * nothing else. A judge that names no provider calls the AI router of the server that runs it, as the replica's own
 * identity, over the worker's socket: its replicas need no network at all.
 */
public final class JudgeFunction {

    /** The replica's environment variable describing its judge. */
    public static final String SPEC_ENV = "CHALK_JUDGE";
    /** The replica's environment variable the provider key's secret is bound to. */
    static final String KEY_ENV = "CHALK_JUDGE_API_KEY";

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Logger log = LoggerFactory.getLogger(JudgeFunction.class);

    private JudgeFunction() {}

    /**
     * Whether a scorer is a judge this class deploys.
     *
     * @param scorer anything given as a scorer
     * @return whether it is an {@link LlmJudge} or a {@link JevJudge}
     */
    public static boolean isJudge(@Nullable Object scorer) {
        return scorer instanceof LlmJudge<?> || scorer instanceof JevJudge;
    }

    /**
     * Deploys a judge as its scorer function, or finds its unchanged version.
     *
     * @param judge   an {@link LlmJudge} or {@link JevJudge}
     * @param channel the channel to the server
     * @return the version serving it
     * @throws IllegalArgumentException when the judge has a prompt or parse function, which cannot travel
     * @throws ai.chalk.compute.error.ChalkComputeException when the server refuses the deployment
     */
    public static FunctionVersion deploy(Scorer judge, Channel channel) {
        return deploy(judge, new FunctionDeployer(channel, image -> image.baseImage()));
    }

    /**
     * Deploys a judge as its scorer function with {@code deployer}, or finds its unchanged version.
     *
     * @param judge    an {@link LlmJudge} or {@link JevJudge}
     * @param deployer the deployer, such as a Spring application's
     * @return the version serving it
     * @throws IllegalArgumentException when the judge has a prompt or parse function, which cannot travel
     * @throws ai.chalk.compute.error.ChalkComputeException when the server refuses the deployment
     */
    public static FunctionVersion deploy(Scorer judge, FunctionDeployer deployer) {
        ObjectNode spec = spec(judge);
        JudgeProvider provider = provider(judge);
        FunctionDefinition definition = define(judge, spec, provider);
        List<Class<?>> needed = new ArrayList<>(List.of(JudgeFunction.class));
        if (judge instanceof LlmJudge<?> llm) {
            needed.add(llm.gradeType());
        }
        try (CodeSnapshot code = CodeSnapshot.ofClassPath(needed)) {
            FunctionDeployer.Deployment done =
                    deployer.ensure(definition, List.of(definition), code, WorkerMode.PLAIN, false);
            log.info(
                    "{}: {} judge version {}",
                    definition.name(),
                    done.reused() ? "reused" : "deployed",
                    done.version().version());
            return done.version();
        }
    }

    /**
     * What a function worker calls: grades one row with the judge this process's environment describes. Registered
     * by {@link #register}; it is named in the worker's {@code CHALK_WORKER_FUNCTIONS} entry.
     *
     * @param row the row's input columns by name
     * @return the grade
     * @throws JudgeException when the row cannot be graded
     */
    public static EvaluationScorerResult score(Map<String, ?> row) {
        return grade(fromEnvironment(System.getenv(), null), row);
    }

    /**
     * Registers the judge an environment describes, as a worker does.
     *
     * @param registry the worker's registry
     * @param name     the name its entry gives
     * @param env      the replica's environment
     * @param server   the worker's client of the server that runs it, whose AI router a judge without a provider
     *                 calls; null when it has none
     * @throws IllegalStateException when the environment describes no judge, or another one
     * @throws ClassNotFoundException when the grade record is not in the code
     */
    public static void register(
            FunctionRegistry registry, String name, Map<String, String> env, @Nullable SandboxClient server)
            throws ClassNotFoundException {
        Scorer judge = fromEnvironment(env, server);
        if (!judge.name().equals(name)) {
            throw new IllegalStateException(
                    "the worker serves " + name + ", but " + SPEC_ENV + " describes the judge " + judge.name());
        }
        ObjectNode spec = spec(judge);
        define(judge, spec, provider(judge), registry, arguments -> grade(judge, row(inputs(judge), arguments)));
    }

    private static Scorer fromEnvironment(Map<String, String> env, @Nullable SandboxClient server) {
        String text = env.get(SPEC_ENV);
        if (text == null || text.isBlank()) {
            throw new IllegalStateException(
                    SPEC_ENV + " is not set: this worker serves an LLM judge, which the deployment describes there");
        }
        JsonNode spec;
        try {
            spec = JSON.readTree(text);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(SPEC_ENV + " is not JSON: " + e.getOriginalMessage());
        }
        String baseUrl = spec.hasNonNull("base_url") ? spec.get("base_url").asText() : null;
        Secret key = spec.path("api_key").asBoolean() ? Secret.fromLocalEnv(KEY_ENV) : null;
        JudgeProvider provider = new JudgeProvider(
                baseUrl, key, baseUrl == null && key == null && server != null ? server.channel() : null);
        try {
            return switch (spec.path("kind").asText()) {
                case "llm_judge" ->
                    LlmJudge.fromSpec(spec, Thread.currentThread().getContextClassLoader(), provider);
                case "jev" -> JevJudge.fromSpec(spec, provider);
                default -> throw new IllegalStateException(SPEC_ENV + " names no judge kind: " + spec.path("kind"));
            };
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException("the judge's grade record "
                    + spec.path("grade").asText() + " is not in the deployed code: " + e.getMessage());
        }
    }

    private static FunctionDefinition define(Scorer judge, ObjectNode spec, JudgeProvider provider) {
        return define(judge, spec, provider, new FunctionRegistry(), arguments -> {
            throw new IllegalStateException("a judge's definition is for deploying, not calling");
        });
    }

    private static FunctionDefinition define(
            Scorer judge,
            ObjectNode spec,
            JudgeProvider provider,
            FunctionRegistry registry,
            java.util.function.Function<Object[], Object> body) {
        Map<String, String> env = new LinkedHashMap<>();
        env.put(SPEC_ENV, spec.toString());
        SecretBindings secrets =
                provider.apiKey() == null ? SecretBindings.NONE : SecretBindings.NONE.with(KEY_ENV, provider.apiKey());
        DeploymentOptions deployment = new DeploymentOptions(
                Optional.empty(),
                Optional.empty(),
                Optional.empty(),
                env,
                secrets,
                java.util.OptionalInt.empty(),
                java.util.OptionalInt.empty());
        if (provider.apiKey() != null || provider.baseUrl() != null) {
            // a replica has no network unless its policy gives one: a judge calling its provider directly may reach
            // that provider's host, and nothing else
            deployment = deployment.withNetwork(providerOnly(provider));
        }
        String description = judge instanceof LlmJudge<?> llm
                ? "LLM judge grading " + llm.gradeType().getSimpleName() + " with "
                        + spec.path("model").asText()
                : "JEV judge: " + spec.path("model").asText() + ", escalating to "
                        + spec.path("fallback_model").asText();
        return registry.registerScorer(judge.name(), description, inputs(judge), binding(), deployment, body);
    }

    private static NetworkPolicy providerOnly(JudgeProvider provider) {
        URI endpoint = URI.create(provider.baseUrl() != null ? provider.baseUrl() : JudgeProvider.OPENAI);
        String host = endpoint.getHost();
        int port = endpoint.getPort() != -1 ? endpoint.getPort() : "http".equals(endpoint.getScheme()) ? 80 : 443;
        boolean literal = host.contains(":") || host.matches("[0-9.]+");
        return literal
                ? NetworkPolicy.none().allowRoute(host.replace("[", "").replace("]", ""), port, port)
                : NetworkPolicy.allowlist(host);
    }

    private static Method binding() {
        try {
            return JudgeFunction.class.getMethod("score", Map.class);
        } catch (NoSuchMethodException e) {
            throw new IllegalStateException(e);
        }
    }

    private static ObjectNode spec(Scorer judge) {
        if (judge instanceof LlmJudge<?> llm) {
            return llm.spec();
        }
        if (judge instanceof JevJudge jev) {
            return jev.spec();
        }
        throw new IllegalArgumentException(judge + " is not a judge");
    }

    private static JudgeProvider provider(Scorer judge) {
        return judge instanceof LlmJudge<?> llm ? llm.provider() : ((JevJudge) judge).provider();
    }

    private static List<String> inputs(Scorer judge) {
        return judge instanceof LlmJudge<?> llm ? llm.inputs() : ((JevJudge) judge).inputs();
    }

    private static Map<String, @Nullable Object> row(List<String> columns, Object[] arguments) {
        Map<String, @Nullable Object> row = new LinkedHashMap<>();
        for (int i = 0; i < columns.size(); i++) {
            row.put(columns.get(i), arguments[i]);
        }
        return row;
    }

    private static EvaluationScorerResult grade(Scorer judge, Map<String, ?> row) {
        return judge instanceof LlmJudge<?> llm ? llm.score(row) : ((JevJudge) judge).score(row);
    }
}
