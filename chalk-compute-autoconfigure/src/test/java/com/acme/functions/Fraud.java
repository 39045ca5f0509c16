package com.acme.functions;

import ai.chalk.compute.function.ChalkFunction;
import ai.chalk.compute.function.ChalkScorer;

/** A bean with two functions and a scorer, using an injected dependency. */
public class Fraud {

    private final Greeting greeting;

    public Fraud(Greeting greeting) {
        this.greeting = greeting;
    }

    @ChalkFunction(description = "Greets a customer")
    public String greet(String name) {
        return greeting.greet(name);
    }

    @ChalkFunction(name = "fraudScore")
    public double score(String text, int limit) {
        return Math.min(text.length(), limit) / (double) limit;
    }

    @ChalkScorer
    public double exact(String expected, String output) {
        return expected.equals(output) ? 1 : 0;
    }

    /** Not a function: no annotation. */
    public String helper() {
        return "helper";
    }
}
