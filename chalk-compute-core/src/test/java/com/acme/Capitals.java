package com.acme;

import ai.chalk.compute.evaluation.EvaluationScorerResult;
import ai.chalk.compute.function.ChalkFunction;
import ai.chalk.compute.function.ChalkScorer;
import java.util.Map;

/** An evaluation's task and scorer over a dataset of countries and their capitals, run by the real server's workers. */
public class Capitals {

    private static final Map<String, String> KNOWN = Map.of("France", "Paris", "Japan", "tokyo", "Peru", "Lima");

    /** Knows three capitals (one in the wrong case) and fails on any other country, so a run has a failed row. */
    @ChalkFunction
    public static String capital(String country) {
        String known = KNOWN.get(country);
        if (known == null) {
            throw new IllegalArgumentException("no capital known for " + country);
        }
        return known;
    }

    /** A parameter that binds to no column of the capitals dataset. */
    @ChalkFunction
    public static long population(String city) {
        return city.length();
    }

    @ChalkScorer(description = "1 when the answer names the expected capital exactly, 0.5 when only the case differs")
    public static EvaluationScorerResult capitalMatch(String expected, String output) {
        double score = expected.equals(output) ? 1 : expected.equalsIgnoreCase(output) ? 0.5 : 0;
        return EvaluationScorerResult.of(score, Map.of("length", output.length()));
    }
}
