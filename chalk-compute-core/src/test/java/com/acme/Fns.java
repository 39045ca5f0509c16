package com.acme;

import ai.chalk.compute.function.ChalkFunction;

/** The example of a signature that cannot travel: {@code Object} has no Arrow mapping. */
public class Fns {

    @ChalkFunction
    public static double score(String text, Object x) {
        return text.length();
    }
}
