package ai.chalk.compute.function.worker;

import ai.chalk.compute.function.FunctionRegistry;
import com.acme.Orders;

/**
 * A {@link WorkerFunctions} found with {@link java.util.ServiceLoader}, as the Spring starter's will be: it serves
 * mode {@code test:orders} by registering an {@link Orders} instance it makes itself.
 */
public final class EchoWorkerFunctions implements WorkerFunctions {

    @Override
    public boolean supports(String mode) {
        return mode.equals("test:orders");
    }

    @Override
    public FunctionRegistry load(WorkerSettings settings) {
        FunctionRegistry registry = new FunctionRegistry();
        registry.register(new Orders("Bonjour, "));
        return registry;
    }
}
