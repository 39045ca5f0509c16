package ai.chalk.compute.evaluation;

import java.util.Optional;

/**
 * One scorer as an evaluation pinned it: either a built-in with its options, or a scorer function's version.
 *
 * @param id                the scorer's id in the evaluation, which names its score and metadata columns in a run's
 *                          result dataset: the built-in's or the function's name ({@code exact_match},
 *                          {@code priceAccuracy}), with {@code -2}, {@code -3}... when two would share one
 * @param builtinId         the built-in's wire id ({@code numeric_close:{"abs_tol":0.01}}), for a built-in
 * @param functionVersionId the pinned function version, for a scorer function
 */
public record EvaluationScorer(String id, Optional<String> builtinId, Optional<String> functionVersionId) {

    static EvaluationScorer of(ai.chalk.compute.proto.evaluation.v1.EvaluationScorer s) {
        var spec = s.getSpec();
        return new EvaluationScorer(
                s.getId(),
                spec.hasBuiltin() ? Optional.of(spec.getBuiltin().getId()) : Optional.empty(),
                spec.hasFunction() ? Optional.of(spec.getFunction().getFunctionVersionId()) : Optional.empty());
    }
}
