package ai.chalk.compute.function;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Serves a class's {@link ChalkFunction} and {@link ChalkScorer} methods from one deployment, each
 * replica holding one instance: state built once (a loaded model, a connection pool) serves every call.
 * <pre>{@code
 * @ChalkClass(memory = "8Gi", minReplicas = 1)
 * public class Embedder {
 *     private final Model model = Model.load("/models/e5");
 *
 *     @ChalkFunction
 *     public List<Float> embed(String text) {
 *         return model.embed(text);
 *     }
 * }
 * }</pre>
 *
 * <p>The deployment options live here, not on the methods. The methods are registered as
 * {@code <class name>.<method name>}, for example {@code Embedder.embed}. The timeout, retries and
 * concurrency set here are defaults each method may override. A class registered by type needs a
 * no-argument constructor; otherwise register an instance.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.TYPE)
public @interface ChalkClass {

    /** The deployment's name, and the prefix of its methods' names; empty for the class's simple name. */
    String name() default "";

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
