package ai.chalk.compute.function;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Makes a public method a Chalk function: deployed with its own replicas and called by name.
 * <pre>{@code
 * public class Fraud {
 *     @ChalkFunction(cpu = "2", memory = "4Gi", maxReplicas = 5, description = "Scores a transaction")
 *     public double score(Transaction transaction, @Default("0.5") double threshold) {
 *         ...
 *     }
 * }
 * new FunctionRegistry().register(Fraud.class);
 * }</pre>
 *
 * <p>Parameters and the return value travel as Arrow (see
 * {@link ai.chalk.compute.function.arrow.ArrowTypeMapping} for the Java types that can); parameters are
 * matched by name, so compile with {@code -parameters} or annotate each with {@link Param}. In a class
 * annotated with {@link ChalkClass}, the class holds the deployment options and the method only its name,
 * description and call options.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.METHOD)
public @interface ChalkFunction {

    /**
     * The registered name; empty for the method's name. Use it only to keep an existing deployment's name
     * after renaming the method: changing it deploys another function, it does not rename this one.
     */
    String name() default "";

    /** What the function does, published in the catalog as {@code chalk.function.description}. */
    String description() default "";

    /**
     * The container image: a reference such as {@code "eclipse-temurin:17-jre"}. Leave empty for the
     * deployment's default image, or use {@link #imageFactory()} to build one with {@code Image}; not both.
     */
    String image() default "";

    /**
     * The name of a static, parameterless method returning {@link ai.chalk.compute.image.Image}: a method
     * of the annotated class ({@code "gpuImage"}) or of another ({@code "com.acme.Images#gpu"}). Called
     * once, at registration.
     */
    String imageFactory() default "";

    /** CPU per replica as a Kubernetes quantity, such as {@code "2"} or {@code "500m"}; empty for the default. */
    String cpu() default "";

    /** Memory per replica as a Kubernetes quantity, such as {@code "4Gi"}; empty for the default. */
    String memory() default "";

    /**
     * GPUs per replica in Kubernetes notation, such as {@code "1"} or {@code "nvidia-tesla-t4:1"}; empty for none. A
     * server without GPUs for function workers (a standalone one) refuses the deployment saying so.
     */
    String gpu() default "";

    /** Environment variables of the replicas, each {@code "KEY=value"}. */
    String[] env() default {};

    /**
     * Chalk secrets of the environment that the replicas receive as environment variables: {@code "NAME"} under its
     * own name, {@code "VAR=NAME"} as the variable VAR. Their revisions are part of the version's identity: setting
     * one again makes the next deploy a new version.
     */
    String[] secrets() default {};

    /**
     * What the replicas may reach on the network, in code_sandboxes' words: {@code "inherit"} (the default: what the
     * deployment gives, no network), {@code "none"}, {@code "allowlist"} (the {@link #allowedHosts()} only) or
     * {@code "all"}. See {@link ai.chalk.compute.network.NetworkPolicy}.
     */
    String network() default "inherit";

    /**
     * The hosts the replicas may reach: exact names or {@code *.} wildcards; implies {@code network = "allowlist"}.
     */
    String[] allowedHosts() default {};

    /**
     * Credentials only some hosts receive, each {@code "HOST[,HOST...]=SECRET"}: the variable SECRET holds a placeholder
     * that the egress proxy replaces by the Chalk secret's value in headers to those hosts (see
     * {@link ai.chalk.compute.network.Credential}); the hosts are allowed as well.
     */
    String[] credentials() default {};

    /** The fewest replicas kept running; {@code 0} lets the deployment scale to zero; {@code -1} for the default. */
    int minReplicas() default -1;

    /** The most replicas started under load; {@code -1} for the default. */
    int maxReplicas() default -1;

    /**
     * How long one call may run: an ISO-8601 duration ({@code "PT5M"}), a number of seconds
     * ({@code "300"}), or a number with a unit ({@code "300s"}, {@code "5m"}, {@code "1h"}); empty for the default.
     */
    String timeout() default "";

    /** How often a failed call is retried; {@code -1} for the default. */
    int retries() default -1;

    /** How many calls one replica runs at the same time; {@code -1} for the default. */
    int concurrency() default -1;
}
