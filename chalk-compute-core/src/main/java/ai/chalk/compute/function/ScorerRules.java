package ai.chalk.compute.function;

import ai.chalk.compute.evaluation.EvaluationScorerResult;
import ai.chalk.compute.function.arrow.TypeNames;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.math.BigDecimal;
import java.util.List;
import java.util.Set;

/** What makes a method a valid scorer, beyond being a valid function. */
final class ScorerRules {

    /** The parameter bound to what the evaluated task returned. */
    static final String OUTPUT = "output";
    /** The parameter bound to the evaluated task's trace. */
    static final String TRACE = "trace";

    private static final Set<Type> NUMBERS = Set.of(
            byte.class,
            short.class,
            int.class,
            long.class,
            float.class,
            double.class,
            Byte.class,
            Short.class,
            Integer.class,
            Long.class,
            Float.class,
            Double.class,
            BigDecimal.class);

    private ScorerRules() {}

    /** Checks the return type is a number, an EvaluationScorerResult or a List of them. */
    static void checkReturnType(Type returnType, String where) {
        boolean isList = returnType instanceof ParameterizedType p
                && p.getRawType() == List.class
                && p.getActualTypeArguments()[0] == EvaluationScorerResult.class;
        if (!NUMBERS.contains(returnType) && returnType != EvaluationScorerResult.class && !isList) {
            throw new FunctionSignatureException(
                    where + ": a @ChalkScorer returns a number, an EvaluationScorerResult or a "
                            + "List<EvaluationScorerResult>, not " + TypeNames.simple(returnType));
        }
    }

    /** Checks there is something to score. */
    static void checkParameterCount(int count, String where) {
        if (count == 0) {
            throw new FunctionSignatureException(
                    where + ": a @ChalkScorer takes at least one parameter: the dataset columns "
                            + "it reads by name, or output for what the task returned");
        }
    }

    /** What a scorer parameter of this name binds to. */
    static ParameterRole roleOf(String parameterName) {
        return switch (parameterName) {
            case OUTPUT -> ParameterRole.OUTPUT;
            case TRACE -> ParameterRole.TRACE;
            default -> ParameterRole.COLUMN;
        };
    }
}
