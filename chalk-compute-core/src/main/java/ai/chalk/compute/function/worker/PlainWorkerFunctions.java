package ai.chalk.compute.function.worker;

import ai.chalk.compute.connection.ConnectionSettings;
import ai.chalk.compute.evaluation.judge.JudgeFunction;
import ai.chalk.compute.function.FunctionRegistry;
import ai.chalk.compute.function.RegisteredFunction;
import ai.chalk.compute.sandbox.SandboxClient;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.Optional;
import java.util.Set;

/**
 * The {@code plain} mode: registers each named class and checks that every function is registered under its name by
 * the method named. A class whose instance methods need the server (to create sandboxes, say) declares a public
 * constructor taking a {@link SandboxClient}: it gets the worker's client of the server that runs it
 * ({@code CHALK_COMPUTE_TARGET}); other classes are made with their no-argument constructor when first needed. An
 * entry naming {@link JudgeFunction} serves the LLM judge its deployment describes ({@value JudgeFunction#SPEC_ENV}).
 */
final class PlainWorkerFunctions implements WorkerFunctions {

    private final SandboxClient serverClient;

    /** @param serverClient the worker's client of the server that runs it, or {@code null} when it has none */
    PlainWorkerFunctions(SandboxClient serverClient) {
        this.serverClient = serverClient;
    }

    @Override
    public boolean supports(String mode) {
        return "plain".equals(mode);
    }

    @Override
    public FunctionRegistry load(WorkerSettings settings) throws ClassNotFoundException {
        FunctionRegistry registry = new FunctionRegistry();
        Set<String> classes = new LinkedHashSet<>();
        settings.functions().forEach(f -> classes.add(f.className()));
        ClassLoader loader = Thread.currentThread().getContextClassLoader();
        for (FunctionBinding binding : settings.functions()) {
            // an LLM judge's body is the judge the deployment describes, not a method of the application's
            if (binding.className().equals(JudgeFunction.class.getName())) {
                JudgeFunction.register(registry, binding.name(), System.getenv(), serverClient);
                classes.remove(binding.className());
            }
        }
        for (String className : classes) {
            Class<?> type = Class.forName(className, true, loader);
            Optional<Constructor<?>> withClient = clientConstructor(type);
            if (withClient.isPresent()) {
                registry.register(instantiate(withClient.get()));
            } else {
                registry.register(type);
            }
        }
        for (FunctionBinding binding : settings.functions()) {
            RegisteredFunction function = registry.find(binding.name())
                    .orElseThrow(() -> new IllegalStateException(binding + ": " + binding.className()
                            + " registers no function named '" + binding.name() + "'; it registers "
                            + registry.definitions().stream().map(d -> d.name()).toList()));
            if (!function.definition().method().getName().equals(binding.methodName())) {
                throw new IllegalStateException(binding + ": '" + binding.name() + "' is "
                        + function.definition().signature() + ", not method " + binding.methodName());
            }
        }
        return registry;
    }

    private static Optional<Constructor<?>> clientConstructor(Class<?> type) {
        return Arrays.stream(type.getConstructors())
                .filter(c -> c.getParameterCount() == 1 && c.getParameterTypes()[0] == SandboxClient.class)
                .findFirst();
    }

    private Object instantiate(Constructor<?> constructor) {
        if (serverClient == null) {
            throw new IllegalStateException(
                    constructor.getDeclaringClass().getName() + " needs a SandboxClient, but this"
                            + " worker has no server to connect to (" + ConnectionSettings.ENV_TARGET + " is not set)");
        }
        try {
            return constructor.newInstance(serverClient);
        } catch (InvocationTargetException e) {
            throw new IllegalStateException(
                    "new " + constructor.getDeclaringClass().getName() + "(SandboxClient) threw " + e.getCause(),
                    e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(
                    "cannot create " + constructor.getDeclaringClass().getName() + ": " + e, e);
        }
    }
}
