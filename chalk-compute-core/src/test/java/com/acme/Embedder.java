package com.acme;

import ai.chalk.compute.function.ChalkClass;
import ai.chalk.compute.function.ChalkFunction;
import ai.chalk.compute.function.ChalkScorer;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/** A class deployment: one instance's state serves all its methods. */
@ChalkClass(memory = "8Gi", minReplicas = 1, timeout = "PT30S", retries = 1)
public class Embedder {

    /** How many instances were made, to show the registry makes one. */
    public static final AtomicInteger INSTANCES = new AtomicInteger();

    private final AtomicInteger calls = new AtomicInteger();

    public Embedder() {
        INSTANCES.incrementAndGet();
    }

    @ChalkFunction(description = "Embeds text")
    public List<Float> embed(String text) {
        calls.incrementAndGet();
        return List.of((float) text.length(), (float)
                text.chars().filter(Character::isUpperCase).count());
    }

    @ChalkFunction(timeout = "60")
    public int calls() {
        return calls.get();
    }

    @ChalkScorer
    public double similarity(String expected, String output) {
        return expected.equalsIgnoreCase(output) ? 1.0 : 0.0;
    }
}
