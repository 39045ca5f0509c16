package ai.chalk.compute.autoconfigure;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * Matches when {@code chalk.compute.target} names a remote server (set and not blank; an empty
 * value means the embedded server, as if it were unset).
 */
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD})
@Documented
@Conditional(ConditionalOnRemoteTarget.OnRemoteTarget.class)
public @interface ConditionalOnRemoteTarget {

    /** The condition behind {@link ConditionalOnRemoteTarget}. */
    class OnRemoteTarget extends SpringBootCondition {
        @Override
        public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
            return RemoteTarget.configured(context.getEnvironment())
                    .map(target -> ConditionOutcome.match("chalk.compute.target=" + target))
                    .orElseGet(() -> ConditionOutcome.noMatch("chalk.compute.target is not set"));
        }
    }
}
