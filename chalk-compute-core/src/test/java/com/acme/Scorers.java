package com.acme;

import ai.chalk.compute.evaluation.EvaluationScorerResult;
import ai.chalk.compute.function.ChalkScorer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Scorers of each accepted return type. */
public class Scorers {

    @ChalkScorer(description = "1 when the answer names the expected city")
    public static double mentionsCity(String expected, String output) {
        return output.contains(expected) ? 1 : 0;
    }

    @ChalkScorer
    public static EvaluationScorerResult judged(String input, String output, String trace) {
        return EvaluationScorerResult.of(
                output.length() > input.length() ? 0.9 : 0.1,
                Map.of("reason", "length", "steps", trace.split(",").length, "flags", List.of(true, false)));
    }

    @ChalkScorer
    public static List<EvaluationScorerResult> perWord(String output) {
        List<EvaluationScorerResult> results = new ArrayList<>();
        for (String word : output.split(" ")) {
            if (!word.isEmpty()) {
                results.add(EvaluationScorerResult.of(word.length() / 10.0, Map.of("word", word)));
            }
        }
        return results;
    }
}
