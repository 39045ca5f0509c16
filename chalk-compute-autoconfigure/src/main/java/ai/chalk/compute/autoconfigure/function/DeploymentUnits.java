package ai.chalk.compute.autoconfigure.function;

import ai.chalk.compute.function.FunctionDefinition;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Which functions share a deployment: those of one bean with the same deployment settings (image, resources,
 * replicas, env, secrets) and call policy (concurrency, retries). Each of them is deployed serving all of them, so the
 * server runs one set of replicas (one JVM each) for the bean rather than one per function; a function given settings
 * of its own gets replicas of its own. A {@code @ChalkClass} bean's methods share their class's settings, so it is one
 * deployment as before.
 */
final class DeploymentUnits {

    private DeploymentUnits() {}

    /**
     * The functions deployed together with {@code function}, {@code function} included, in registration order.
     *
     * @param function  a registered function
     * @param functions the application's functions
     * @return the functions its replicas serve
     */
    static List<FunctionDefinition> servedWith(FunctionDefinition function, ChalkFunctions functions) {
        Optional<String> bean = functions.function(function.name()).map(FunctionDeploymentState::beanName);
        return functions.registry().definitions().stream()
                .filter(d -> d.equals(function)
                        || (d.deploymentName().equals(function.deploymentName()))
                        || (bean.isPresent()
                                && bean.equals(functions.function(d.name()).map(FunctionDeploymentState::beanName))
                                && sameReplicas(d, function)))
                .toList();
    }

    private static boolean sameReplicas(FunctionDefinition a, FunctionDefinition b) {
        return a.deployment().equals(b.deployment())
                && Objects.equals(a.callOptions().retries(), b.callOptions().retries())
                && Objects.equals(a.callOptions().concurrency(), b.callOptions().concurrency());
    }
}
