package ai.chalk.compute.server.evaluation.scorer;

import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * One configured built-in scorer: it reads its input columns from a row (the dataset's columns plus the task's
 * {@code output}) and scores the row between 0 and 1. Instances are immutable and safe to share between threads.
 */
public interface BuiltinScorer {

    /**
     * The scorer's name, such as {@code exact_match}.
     *
     * @return the name
     */
    String name();

    /**
     * The columns the scorer reads, candidate first: an evaluation checks they exist before it runs.
     *
     * @return the column names
     */
    List<String> inputs();

    /**
     * Scores one row.
     *
     * @param row the row's values by column name
     * @return the score and its metadata
     * @throws RowScoringException when the row cannot be scored (a missing or null column, say)
     */
    RowScore score(Map<String, @Nullable Object> row);
}
