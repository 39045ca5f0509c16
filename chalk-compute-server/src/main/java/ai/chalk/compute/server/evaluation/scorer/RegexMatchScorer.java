package ai.chalk.compute.server.evaluation.scorer;

import ai.chalk.compute.server.regex.DeadlineCharSequence;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;
import org.jspecify.annotations.Nullable;

/**
 * {@code regex_match}: 1 when the pattern is found in the candidate column (or, with {@code full_match}, covers
 * it), with the matched text and its named groups as metadata. The pattern is the {@code pattern} option or, without
 * one, the second input column. Patterns and texts may come from anyone, so each match has a time budget: a
 * pattern that backtracks catastrophically fails its row instead of holding a run's thread.
 */
final class RegexMatchScorer implements BuiltinScorer {

    static final Duration MATCH_BUDGET = Duration.ofSeconds(1);
    private static final Pattern GROUP_NAME = Pattern.compile("\\(\\?<([a-zA-Z][a-zA-Z0-9]*)>");

    private final List<String> inputs;
    private final boolean fullMatch;
    private final int flags;
    private final @Nullable Pattern fixed;

    RegexMatchScorer(ScorerOptions options) {
        String pattern = options.string("pattern", null);
        this.inputs = options.inputs(pattern == null ? BuiltinScorers.PAIR : BuiltinScorers.SINGLE);
        this.fullMatch = options.bool("full_match", false);
        this.flags = options.bool("case_insensitive", false) ? Pattern.CASE_INSENSITIVE | Pattern.UNICODE_CASE : 0;
        try {
            this.fixed = pattern == null ? null : Pattern.compile(pattern, flags);
        } catch (PatternSyntaxException e) {
            throw new IllegalArgumentException("regex_match option pattern is not a valid regular expression: "
                    + e.getDescription() + " near index " + e.getIndex());
        }
    }

    @Override
    public String name() {
        return "regex_match";
    }

    @Override
    public List<String> inputs() {
        return inputs;
    }

    @Override
    public RowScore score(Map<String, @Nullable Object> row) {
        Pattern pattern = fixed != null ? fixed : compile(RowValues.text(row, inputs.get(1)));
        String text = RowValues.text(row, inputs.get(0));
        Matcher matcher = pattern.matcher(new DeadlineCharSequence(text, System.nanoTime() + MATCH_BUDGET.toNanos()));
        boolean matched;
        try {
            matched = fullMatch ? matcher.matches() : matcher.find();
        } catch (DeadlineCharSequence.DeadlineExceeded e) {
            throw new RowScoringException("regex_match gave up after " + MATCH_BUDGET.toSeconds()
                    + " s: the pattern backtracks too much on this row's " + inputs.get(0));
        }
        Map<String, @Nullable Object> metadata = new LinkedHashMap<>();
        metadata.put("matched", matched);
        metadata.put("match", matched ? matcher.group() : null);
        Map<String, @Nullable Object> groups = new LinkedHashMap<>();
        if (matched) {
            Matcher names = GROUP_NAME.matcher(pattern.pattern());
            while (names.find()) {
                if (!escaped(pattern.pattern(), names.start())) {
                    groups.put(names.group(1), matcher.group(names.group(1)));
                }
            }
        }
        metadata.put("groups", groups);
        return RowScore.passFail(matched, metadata);
    }

    private Pattern compile(String pattern) {
        try {
            return Pattern.compile(pattern, flags);
        } catch (PatternSyntaxException e) {
            throw new RowScoringException("column '" + inputs.get(1) + "' is not a valid regular expression: "
                    + e.getDescription() + " near index " + e.getIndex());
        }
    }

    /** Whether the character at {@code index} follows an odd number of backslashes. */
    private static boolean escaped(String pattern, int index) {
        int backslashes = 0;
        for (int i = index - 1; i >= 0 && pattern.charAt(i) == '\\'; i--) {
            backslashes++;
        }
        return backslashes % 2 == 1;
    }
}
