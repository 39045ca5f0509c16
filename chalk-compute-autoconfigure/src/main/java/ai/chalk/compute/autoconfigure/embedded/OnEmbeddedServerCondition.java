package ai.chalk.compute.autoconfigure.embedded;

import ai.chalk.compute.autoconfigure.ChalkComputeProperties;
import ai.chalk.compute.autoconfigure.ChalkComputeProperties.Switch;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * Matches when the embedded server should run: {@code chalk.compute.embedded.enabled=true}, or
 * {@code auto} (the default) with no {@code chalk.compute.target}.
 */
class OnEmbeddedServerCondition extends SpringBootCondition {

    @Override
    public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
        Binder binder = Binder.get(context.getEnvironment());
        Switch enabled = binder.bind(ChalkComputeProperties.PREFIX + ".embedded.enabled", Switch.class).orElse(Switch.AUTO);
        String target = binder.bind(ChalkComputeProperties.PREFIX + ".target", String.class).orElse("");
        return switch (enabled) {
            case TRUE -> ConditionOutcome.match("chalk.compute.embedded.enabled=true");
            case FALSE -> ConditionOutcome.noMatch("chalk.compute.embedded.enabled=false");
            case AUTO -> target.isBlank()
                    ? ConditionOutcome.match("no chalk.compute.target set (chalk.compute.embedded.enabled=auto)")
                    : ConditionOutcome.noMatch("chalk.compute.target=" + target + " is set (chalk.compute.embedded.enabled=auto)");
        };
    }
}
