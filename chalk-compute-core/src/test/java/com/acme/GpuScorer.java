package com.acme;

import ai.chalk.compute.function.ChalkFunction;

/** A function that asks for a GPU, which a standalone server cannot give it. */
public class GpuScorer {

    /** The text's length, on a GPU if there were one. */
    @ChalkFunction(gpu = "1", maxReplicas = 1)
    public static long score(String text) {
        return text.length();
    }
}
