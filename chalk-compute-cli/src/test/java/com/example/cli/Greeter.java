package com.example.cli;

import ai.chalk.compute.function.ChalkFunction;
import ai.chalk.compute.function.Default;

/** A function the command line's tests deploy, list, call and roll back. */
public class Greeter {

    /** {@code copies} greetings of {@code name}, joined by a space. */
    @ChalkFunction(minReplicas = 0, maxReplicas = 1)
    public String greet(String name, @Default("1") long copies) {
        return String.join(" ", java.util.Collections.nCopies((int) copies, "hello " + name));
    }
}
