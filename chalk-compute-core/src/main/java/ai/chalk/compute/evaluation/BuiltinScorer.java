package ai.chalk.compute.evaluation;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A built-in scorer, by its SDK name and options, that the server runs on each row of an evaluation run; make one
 * with {@link Scorers}. Values are immutable: {@link #with} and {@link #inputs} return changed copies.
 * <pre>{@code
 * BuiltinScorer match = Scorers.exactMatch().with("case_insensitive", true).inputs("answer", "capital");
 * }</pre>
 *
 * @param name    the built-in's name, such as {@code exact_match}
 * @param options its options by their SDK names, such as {@code case_insensitive}; sorted, never {@code null}
 */
public record BuiltinScorer(String name, Map<String, Object> options) implements Scorer {

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS);

    /** Checks the name and option names, and copies the options. */
    public BuiltinScorer {
        List<String> known = Scorers.OPTIONS.get(name);
        if (known == null) {
            throw new IllegalArgumentException("there is no built-in scorer " + name + "; the built-ins are "
                    + String.join(", ", Scorers.OPTIONS.keySet()));
        }
        for (String option : options.keySet()) {
            if (!known.contains(option)) {
                throw new IllegalArgumentException(
                        name + " has no option " + option + "; its options are " + String.join(", ", known));
            }
        }
        options = Collections.unmodifiableMap(new TreeMap<>(options));
    }

    /**
     * A copy with one option set, by its SDK name: {@code with("case_insensitive", true)}.
     *
     * @param option the option's name
     * @param value  a string, number, boolean or list of them
     * @return the changed copy
     * @throws IllegalArgumentException when this built-in has no such option
     */
    public BuiltinScorer with(String option, Object value) {
        Map<String, Object> changed = new TreeMap<>(options);
        changed.put(option, value instanceof Object[] array ? List.of(array) : value);
        return new BuiltinScorer(name, changed);
    }

    /**
     * A copy that reads other columns: the candidate, then the column it is compared against (by default
     * {@code output} and {@code expected}); {@code json_valid}, and {@code regex_match} with a pattern, read one.
     *
     * @param columns the column scored (usually the task's {@code output}), then the reference column
     * @return the changed copy
     */
    public BuiltinScorer inputs(String... columns) {
        return with("inputs", List.of(columns));
    }

    /**
     * The id the server knows this scorer by: the name, then a colon and the options as a JSON object when there
     * are any ({@code exact_match:{"case_insensitive":true}}); equal options give equal ids.
     *
     * @return the id
     */
    public String id() {
        if (options.isEmpty()) {
            return name;
        }
        try {
            return name + ":" + JSON.writeValueAsString(options);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException(name + " has an option that is not JSON: " + e.getOriginalMessage(), e);
        }
    }

    /**
     * The scorer as an evaluation's request carries it.
     *
     * @return the spec
     */
    public ai.chalk.compute.proto.evaluation.v1.EvaluationScorerSpec toSpec() {
        return ai.chalk.compute.proto.evaluation.v1.EvaluationScorerSpec.newBuilder()
                .setBuiltin(ai.chalk.compute.proto.evaluation.v1.BuiltinScorer.newBuilder()
                        .setId(id()))
                .build();
    }
}
