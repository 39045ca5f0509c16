package ai.chalk.compute.server.evaluation.scorer;

import java.math.BigDecimal;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * {@code numeric_close}: both columns read as numbers. Without {@code graded} the row scores 1 when they are within
 * {@code abs_tol} or {@code rel_tol} of each other (Python's {@code math.isclose}: {@code |a − b| ≤ max(rel_tol ·
 * max(|a|, |b|), abs_tol)}), else 0. With {@code graded} the score falls linearly from 1 (within tolerance) to 0 at
 * a difference of {@code scale} (default: the reference's magnitude), so an answer 10% off scores 0.9. A candidate
 * that is not a number scores 0 and says so; a reference that is not one fails the row.
 */
final class NumericCloseScorer implements BuiltinScorer {

    private final List<String> inputs;
    private final double absTol;
    private final double relTol;
    private final boolean graded;
    private final @Nullable Double scale;

    NumericCloseScorer(ScorerOptions options) {
        this.inputs = options.inputs(BuiltinScorers.PAIR);
        this.absTol = options.nonNegative("abs_tol", 0.0);
        this.relTol = options.nonNegative("rel_tol", 1e-9);
        this.graded = options.bool("graded", false);
        double scaleOption = options.nonNegative("scale", -0.0);
        this.scale = scaleOption > 0 ? scaleOption : null;
    }

    @Override
    public String name() {
        return "numeric_close";
    }

    @Override
    public List<String> inputs() {
        return inputs;
    }

    @Override
    public RowScore score(Map<String, @Nullable Object> row) {
        Map<String, @Nullable Object> metadata = new LinkedHashMap<>();
        Double reference = number(RowValues.value(row, inputs.get(1)));
        if (reference == null) {
            throw new RowScoringException("column '" + inputs.get(1) + "' is not a number: '"
                    + abbreviate(RowValues.text(row, inputs.get(1))) + "'");
        }
        Double candidate = number(RowValues.value(row, inputs.get(0)));
        if (candidate == null) {
            metadata.put(
                    "error",
                    inputs.get(0) + " is not a number: '" + abbreviate(RowValues.text(row, inputs.get(0))) + "'");
            return new RowScore(0, metadata);
        }
        double difference = Math.abs(candidate - reference);
        boolean within = difference <= Math.max(relTol * Math.max(Math.abs(candidate), Math.abs(reference)), absTol);
        metadata.put("difference", difference);
        metadata.put("relative_difference", reference == 0 ? null : difference / Math.abs(reference));
        metadata.put("within_tolerance", within);
        if (!graded || within) {
            return RowScore.passFail(within, metadata);
        }
        double over = scale != null ? scale : Math.abs(reference);
        return new RowScore(over == 0 ? 0 : Math.max(0, 1 - difference / over), metadata);
    }

    private static @Nullable Double number(Object value) {
        if (value instanceof Number n) {
            double d = n.doubleValue();
            return Double.isFinite(d) ? d : null;
        }
        try {
            double d = new BigDecimal(String.valueOf(value).strip()).doubleValue();
            return Double.isFinite(d) ? d : null;
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static String abbreviate(String text) {
        return text.length() <= 60 ? text : text.substring(0, 60) + "...";
    }
}
