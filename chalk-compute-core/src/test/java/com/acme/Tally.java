package com.acme;

import ai.chalk.compute.function.ChalkFunction;
import ai.chalk.compute.function.Default;
import java.util.Collections;

/** Plain functions (default image, no secrets) that the real server's workers run. */
public class Tally {

    @ChalkFunction(description = "Adds two numbers", maxReplicas = 2)
    public static long sum(long a, long b) {
        return a + b;
    }

    @ChalkFunction
    public static String explode(String why) {
        throw new IllegalArgumentException("cannot tally: " + why);
    }

    /** A text default written as it is, and a number's as JSON. */
    @ChalkFunction
    public static String label(String name, @Default("-") String separator, @Default("2") int copies) {
        return String.join(separator, Collections.nCopies(copies, name));
    }
}
