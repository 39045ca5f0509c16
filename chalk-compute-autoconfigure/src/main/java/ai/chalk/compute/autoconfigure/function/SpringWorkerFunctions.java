package ai.chalk.compute.autoconfigure.function;

import ai.chalk.compute.connection.ConnectionSettings;
import ai.chalk.compute.function.FunctionRegistry;
import ai.chalk.compute.function.RegisteredFunction;
import ai.chalk.compute.function.worker.FunctionBinding;
import ai.chalk.compute.function.worker.WorkerFunctions;
import ai.chalk.compute.function.worker.WorkerSettings;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The {@code spring:fully.qualified.MainClass} worker mode: a deployed function's replica boots the application
 * from its main class (as its primary source, like a test does, so its {@code application.yml}, profiles and
 * auto-configuration apply) and serves the functions of the beans Spring made, dependencies and proxies included.
 * Found by the worker ({@code FunctionWorker}) with {@link java.util.ServiceLoader}.
 *
 * <p>The application boots as a worker, with only what its functions need ({@link WorkerContext}): no web server
 * ({@code spring.main.web-application-type=none}), no embedded Chalk Compute server, lazy initialization with the
 * served functions' beans made at startup, no runners, no {@code @Scheduled} methods, no lifecycle beans the functions
 * do not depend on, and {@code chalk.compute.functions.worker=true} (a bean can be switched off in replicas with
 * {@code @ConditionalOnBooleanProperty(name = "chalk.compute.functions.worker", havingValue = false, matchIfMissing =
 * true)}). Its {@code SandboxClient} talks to the server that runs the worker (the replica's
 * {@code CHALK_COMPUTE_TARGET}, a Unix socket), so a function can create sandboxes and return them. These are passed
 * as command line arguments, so they win over the application's own configuration. The context stays open for the
 * worker's life and is closed by Spring's shutdown hook when the worker exits.
 */
public final class SpringWorkerFunctions implements WorkerFunctions {

    private static final String MODE_PREFIX = "spring:";

    /** What makes the application a worker; command line arguments rank above its own configuration. */
    static final String[] WORKER_ARGUMENTS = {
        "--spring.main.web-application-type=none",
        "--chalk.compute.embedded.enabled=false",
        "--chalk.compute.functions.enabled=true",
        "--chalk.compute.functions.worker=true",
    };

    @Override
    public boolean supports(String mode) {
        return mode.startsWith(MODE_PREFIX) && mode.length() > MODE_PREFIX.length();
    }

    @Override
    public FunctionRegistry load(WorkerSettings settings) throws ClassNotFoundException {
        String mainClassName = settings.mode().substring(MODE_PREFIX.length()).trim();
        ConfigurableApplicationContext context = boot(mainClassName, settings.functions());
        try {
            return check(settings, mainClassName, context);
        } catch (RuntimeException e) {
            context.close();
            throw e;
        }
    }

    /**
     * Boots the application as a worker serving some functions.
     *
     * @param mainClassName the application's main class
     * @param functions     the functions served: only their beans and what these depend on are made
     * @return its running context
     * @throws ClassNotFoundException when there is no such class
     */
    static ConfigurableApplicationContext boot(String mainClassName, List<FunctionBinding> functions)
            throws ClassNotFoundException {
        Class<?> mainClass =
                Class.forName(mainClassName, false, Thread.currentThread().getContextClassLoader());
        return WorkerContext.boot(mainClass, functions, workerArguments(System.getenv()));
    }

    /** {@link #WORKER_ARGUMENTS}, and the server that runs the worker as the target when the replica names it. */
    static String[] workerArguments(Map<String, String> env) {
        List<String> args = new ArrayList<>(List.of(WORKER_ARGUMENTS));
        String target = env.get(ConnectionSettings.ENV_TARGET);
        if (target != null && !target.isBlank()) {
            args.add("--chalk.compute.target=" + target);
            args.add("--chalk.compute.tls.enabled=false"); // a local socket, whatever the application uses elsewhere
        }
        return args.toArray(String[]::new);
    }

    private static FunctionRegistry check(
            WorkerSettings settings, String mainClassName, ConfigurableApplicationContext context) {
        ChalkFunctions functions = context.getBeanProvider(ChalkFunctions.class).getIfAvailable();
        if (functions == null) {
            throw new IllegalStateException(
                    mainClassName + " booted without the Chalk Compute functions"
                            + " auto-configuration (ChalkFunctions bean): is it excluded, or replaced by a bean of the application's?");
        }
        FunctionRegistry registry = functions.registry();
        List<String> problems = new ArrayList<>();
        for (FunctionBinding binding : settings.functions()) {
            RegisteredFunction function = registry.find(binding.name()).orElse(null);
            if (function == null) {
                String why = functions
                        .function(binding.name())
                        .map(FunctionDeploymentState::error)
                        .orElse("no bean of " + mainClassName + " declares it; the beans of the classes named declare "
                                + functions.functions().stream()
                                        .map(FunctionDeploymentState::name)
                                        .toList());
                problems.add(binding + ": " + why);
            } else if (!function.definition().method().getName().equals(binding.methodName())) {
                // as in the plain mode, the method decides: the class named may be a subclass declaring none
                problems.add(binding + ": '" + binding.name() + "' is "
                        + function.definition().signature() + " in this application");
            }
        }
        if (!problems.isEmpty()) {
            throw new IllegalStateException("the worker cannot serve " + String.join("; ", problems));
        }
        return registry;
    }
}
