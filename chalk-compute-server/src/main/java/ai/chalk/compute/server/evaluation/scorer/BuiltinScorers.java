package ai.chalk.compute.server.evaluation.scorer;

import java.util.List;

/**
 * The built-in scorers by name: {@link #create(String)} turns a {@code BuiltinScorer.id} from an evaluation into a
 * configured scorer, refusing unknown names and options with a message that lists the valid ones.
 */
public final class BuiltinScorers {

    /** The names of the built-in scorers. */
    public static final List<String> NAMES = List.of(
            "exact_match",
            "levenshtein",
            "regex_match",
            "contains",
            "numeric_close",
            "string_similarity",
            "json_valid",
            "json_match",
            "embedding_similarity");

    static final List<String> PAIR = List.of("output", "expected");
    static final List<String> SINGLE = List.of("output");

    private final Embedders embedders;

    /**
     * The built-ins, with {@code embedding_similarity} embedding through {@code embedders}.
     *
     * @param embedders how embedding models are reached
     */
    public BuiltinScorers(Embedders embedders) {
        this.embedders = embedders;
    }

    /**
     * A configured scorer from its id.
     *
     * @param id the name, optionally followed by a colon and the options as a JSON object
     * @return the scorer
     * @throws IllegalArgumentException naming what is wrong when the name or an option is not valid
     */
    public BuiltinScorer create(String id) {
        BuiltinScorerId parsed = BuiltinScorerId.parse(id);
        ScorerOptions options = new ScorerOptions(parsed.name(), parsed.options());
        BuiltinScorer scorer = switch (parsed.name()) {
            case "exact_match" -> new ExactMatchScorer(options);
            case "levenshtein" -> new LevenshteinScorer(options);
            case "regex_match" -> new RegexMatchScorer(options);
            case "contains" -> new ContainsScorer(options);
            case "numeric_close" -> new NumericCloseScorer(options);
            case "string_similarity" -> new StringSimilarityScorer(options);
            case "json_valid" -> new JsonValidScorer(options);
            case "json_match" -> new JsonMatchScorer(options);
            case "embedding_similarity" -> new EmbeddingSimilarityScorer(options, embedders);
            default ->
                throw new IllegalArgumentException("there is no built-in scorer " + parsed.name()
                        + "; the built-ins are " + String.join(", ", NAMES));
        };
        options.finish();
        return scorer;
    }
}
