package com.acme;

import ai.chalk.compute.function.ChalkFunction;

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
}
