package ai.chalk.compute.function.deploy;

import java.util.Objects;

/**
 * How a deployed function's worker loads it ({@code chalk_compute.worker}): {@code plain} instantiates the class,
 * {@code spring:fully.qualified.MainClass} boots the Spring application in worker mode and calls the bean.
 *
 * @param value the option's value
 */
public record WorkerMode(String value) {

    /** The worker instantiates the function's class with its no-argument constructor. */
    public static final WorkerMode PLAIN = new WorkerMode("plain");

    /** Checks the value is {@code plain} or {@code spring:} and a class name. */
    public WorkerMode {
        Objects.requireNonNull(value, "value");
        if (!value.equals("plain") && !(value.startsWith("spring:") && value.length() > "spring:".length())) {
            throw new IllegalArgumentException(
                    "worker mode '" + value + "' is neither plain nor spring:fully.qualified.MainClass");
        }
    }

    /**
     * The Spring mode for an application.
     *
     * @param mainClass the application's main class
     * @return {@code spring:} and the class's name
     */
    public static WorkerMode spring(Class<?> mainClass) {
        return new WorkerMode("spring:" + mainClass.getName());
    }
}
