package ai.chalk.compute.function.worker;

import ai.chalk.compute.function.FunctionRegistry;

/**
 * A way of loading the functions a worker serves, chosen by the worker's mode ({@code CHALK_WORKER}).
 * The worker has {@code plain} built in; other modes come from implementations found with
 * {@link java.util.ServiceLoader} (listed in {@code META-INF/services/ai.chalk.compute.function.worker.WorkerFunctions}),
 * such as the Spring starter's, which serves {@code spring:fully.qualified.MainClass} by booting the application
 * and registering its beans.
 */
public interface WorkerFunctions {

    /**
     * Whether this loads functions for a mode.
     *
     * @param mode the mode, such as {@code spring:com.acme.App}
     * @return {@code true} when {@link #load} handles it
     */
    boolean supports(String mode);

    /**
     * Loads the functions: a registry holding every one of {@code settings.functions()} under its name.
     *
     * @param settings the worker's settings
     * @return the registry
     * @throws Exception when the functions cannot be loaded; the worker reports it and exits
     */
    FunctionRegistry load(WorkerSettings settings) throws Exception;
}
