package ai.chalk.compute.evaluation.judge;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * What the judging model is told about one component of a grade record, and the range its value must lie in, as
 * pydantic's {@code Field(ge=..., le=..., description=...)} does. Both go into the JSON schema of the request, and the
 * reply is checked against the range.
 * <pre>{@code
 * record TraceQuality(
 *         @JudgeField(min = 0, max = 1, description = "Overall quality.") double score,
 *         @JudgeField(min = 0, max = 2, description = "Shortest reasonable path to the goal.") int directness,
 *         String reason) {}
 * }</pre>
 */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.RECORD_COMPONENT)
public @interface JudgeField {

    /**
     * What the component means, for the model.
     *
     * @return the description; empty for none
     */
    String description() default "";

    /**
     * The smallest value allowed (inclusive), for a number.
     *
     * @return the minimum; negative infinity for none
     */
    double min() default Double.NEGATIVE_INFINITY;

    /**
     * The largest value allowed (inclusive), for a number.
     *
     * @return the maximum; positive infinity for none
     */
    double max() default Double.POSITIVE_INFINITY;
}
