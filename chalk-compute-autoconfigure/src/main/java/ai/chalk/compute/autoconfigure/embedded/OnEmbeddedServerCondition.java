package ai.chalk.compute.autoconfigure.embedded;

import ai.chalk.compute.autoconfigure.ChalkComputeProperties;
import ai.chalk.compute.autoconfigure.ChalkComputeProperties.Switch;
import ai.chalk.compute.autoconfigure.RemoteTarget;
import ai.chalk.compute.sandbox.SandboxClient;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.ConfigurationCondition;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * Matches when the embedded server should run: {@code chalk.compute.embedded.enabled=true}, or
 * {@code auto} (the default) with no {@code chalk.compute.target} and no {@code SandboxClient}
 * bean of the application's own (which talks to a server of its choosing).
 */
class OnEmbeddedServerCondition extends SpringBootCondition implements ConfigurationCondition {

    @Override
    public ConfigurationPhase getConfigurationPhase() {
        return ConfigurationPhase.REGISTER_BEAN;
    }

    @Override
    public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
        Binder binder = Binder.get(context.getEnvironment());
        Switch enabled = binder.bind(ChalkComputeProperties.PREFIX + ".embedded.enabled", Switch.class)
                .orElse(Switch.AUTO);
        java.util.Optional<String> target = RemoteTarget.configured(context.getEnvironment());
        return switch (enabled) {
            case TRUE -> ConditionOutcome.match("chalk.compute.embedded.enabled=true");
            case FALSE -> ConditionOutcome.noMatch("chalk.compute.embedded.enabled=false");
            case AUTO -> {
                if (target.isPresent()) {
                    yield ConditionOutcome.noMatch(
                            "chalk.compute.target=" + target.get() + " is set (chalk.compute.embedded.enabled=auto)");
                }
                String[] own = context.getBeanFactory() == null
                        ? new String[0]
                        : context.getBeanFactory().getBeanNamesForType(SandboxClient.class, true, false);
                yield own.length > 0
                        ? ConditionOutcome.noMatch("the application defines its own SandboxClient "
                                + String.join(", ", own) + " (chalk.compute.embedded.enabled=auto)")
                        : ConditionOutcome.match("no chalk.compute.target set (chalk.compute.embedded.enabled=auto)");
            }
        };
    }
}
