package ai.chalk.compute.function.worker;

import ai.chalk.compute.function.FunctionRegistry;
import ai.chalk.compute.function.RegisteredFunction;
import java.util.LinkedHashSet;
import java.util.Set;

/**
 * The {@code plain} mode: registers each named class (made with its no-argument constructor when needed) and
 * checks that every function is registered under its name by the method named.
 */
final class PlainWorkerFunctions implements WorkerFunctions {

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
        for (String className : classes) {
            registry.register(Class.forName(className, true, loader));
        }
        for (FunctionBinding binding : settings.functions()) {
            RegisteredFunction function = registry.find(binding.name()).orElseThrow(() -> new IllegalStateException(
                    binding + ": " + binding.className() + " registers no function named '" + binding.name()
                            + "'; it registers " + registry.definitions().stream().map(d -> d.name()).toList()));
            if (!function.definition().method().getName().equals(binding.methodName())) {
                throw new IllegalStateException(binding + ": '" + binding.name() + "' is "
                        + function.definition().signature() + ", not method " + binding.methodName());
            }
        }
        return registry;
    }
}
