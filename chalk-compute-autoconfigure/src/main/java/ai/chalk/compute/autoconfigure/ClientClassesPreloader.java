package ai.chalk.compute.autoconfigure;

import ai.chalk.compute.dataset.DatasetClient;
import ai.chalk.compute.evaluation.EvaluationClient;
import ai.chalk.compute.function.deploy.FunctionDeployer;
import ai.chalk.compute.progress.ProgressDisplay;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.sql.SQLClient;
import io.grpc.ManagedChannel;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.util.ReflectionUtils;

/**
 * Loads the classes of the Chalk Compute clients (gRPC stubs, protobuf descriptors, the clients' own classes) on a
 * thread of its own as soon as the application's configuration is read, so that the second core loads them while the
 * startup thread parses the configuration classes and makes the application's other beans (web server, actuator), and
 * the startup thread finds them loaded when it makes ours. Not when the application excludes
 * {@link ChalkComputeAutoConfiguration}, nor in a function worker without a target (which makes no client). It makes throwaway clients over a channel that is never opened nor called, so exactly the
 * classes the real ones need are loaded, with no list of names to keep up to date; then it reads the methods of the
 * starter's bean classes (those of the credentials with a remote target, of the embedded server without one). Best effort: a failure only means
 * the startup thread loads the classes itself.
 */
public final class ClientClassesPreloader implements EnvironmentPostProcessor {

    private static final Logger log = LoggerFactory.getLogger(ClientClassesPreloader.class);

    @Override
    public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
        Binder binder = Binder.get(environment);
        boolean excluded = binder.bind("spring.autoconfigure.exclude", Bindable.listOf(String.class))
                .map(names -> names.contains(ChalkComputeAutoConfiguration.class.getName()))
                .orElse(false);
        boolean workerWithoutTarget = environment.getProperty("chalk.compute.functions.worker", Boolean.class, false)
                && !environment.containsProperty("chalk.compute.target");
        if (excluded || workerWithoutTarget) {
            return;
        }
        boolean remote = RemoteTarget.configured(environment).isPresent();
        Thread loader = new Thread(() -> load(remote ? REMOTE_ONLY : EMBEDDED_ONLY), "chalk-compute-preload");
        loader.setDaemon(true);
        loader.start();
    }

    static void load(List<String> alsoIntrospected) {
        long started = System.nanoTime();
        try {
            ChalkComputeChannel channel = ChalkComputeChannel.remote(ClientClassesPreloader::neverOpened, "preload");
            SandboxClient sandboxes = SandboxClient.forChannel(channel.channel(), ProgressDisplay.fromEnv());
            SQLClient.of(sandboxes);
            DatasetClient.of(sandboxes);
            EvaluationClient.of(sandboxes);
            FunctionDeployer.of(sandboxes);
            // Spring reads every method of each bean's class (event listeners, our function discovery), which loads
            // every type their signatures name (a few hundred protobuf messages): read them here first, into the
            // class's reflection data and Spring's cache of declared methods, which the startup thread then finds
            for (String name : INTROSPECTED) {
                introspect(name);
            }
            alsoIntrospected.forEach(ClientClassesPreloader::introspect);
            log.debug("Chalk Compute client classes loaded in {} ms", (System.nanoTime() - started) / 1_000_000);
        } catch (RuntimeException | LinkageError e) {
            log.debug("Chalk Compute client classes not preloaded: {}", e.toString());
        }
    }

    /** The classes of the starter's beans whose methods Spring reads at startup. */
    private static final List<String> INTROSPECTED = List.of(
            "ai.chalk.compute.sandbox.SandboxClient",
            "ai.chalk.compute.sql.SQLClient",
            "ai.chalk.compute.dataset.DatasetClient",
            "ai.chalk.compute.evaluation.EvaluationClient",
            "ai.chalk.compute.function.deploy.FunctionDeployer",
            "ai.chalk.compute.function.FunctionRegistry",
            "ai.chalk.compute.progress.ProgressDisplay",
            "ai.chalk.compute.autoconfigure.ChalkComputeChannel",
            "ai.chalk.compute.autoconfigure.function.ChalkFunctions",
            "ai.chalk.compute.autoconfigure.function.ChalkFunctionsDeployment",
            "ai.chalk.compute.autoconfigure.evaluation.ApplicationFunctionLookup",
            "ai.chalk.compute.autoconfigure.endpoint.ChalkComputeEndpoint",
            "ai.chalk.compute.autoconfigure.endpoint.ChalkFunctionsEndpoint",
            "ai.chalk.compute.autoconfigure.health.ChalkComputeHealthIndicator",
            "ai.chalk.compute.autoconfigure.health.ChalkFunctionsHealthContributor");

    /**
     * The classes of the beans made only for a remote target: the credentials (resolved from the properties, the
     * environment and {@code ~/.chalk.yml}) and the interceptor that puts their token on each call.
     */
    private static final List<String> REMOTE_ONLY = List.of(
            "ai.chalk.compute.auth.ChalkCredentials",
            "ai.chalk.compute.auth.ChalkYml",
            "ai.chalk.compute.auth.TokenSource",
            "ai.chalk.compute.autoconfigure.auth.ChalkComputeAuthInterceptor");

    /**
     * The embedded server's bean, whose methods name the server's types; absent (and skipped) when the application has
     * the client starter only.
     */
    private static final List<String> EMBEDDED_ONLY =
            List.of("ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServer");

    private static void introspect(String name) {
        try {
            ReflectionUtils.doWithMethods(
                    Class.forName(name, false, ClientClassesPreloader.class.getClassLoader()), method -> {});
        } catch (ClassNotFoundException | LinkageError e) {
            // an optional part the application does not have (actuator): nothing of it to load
        }
    }

    private static ManagedChannel neverOpened() {
        throw new IllegalStateException("the preloading clients make no call");
    }
}
