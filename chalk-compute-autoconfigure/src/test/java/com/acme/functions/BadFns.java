package com.acme.functions;

import ai.chalk.compute.function.ChalkFunction;

/** A bean with a function whose parameter type cannot travel, and a valid one beside it. */
public class BadFns {

    @ChalkFunction
    public String bad(Object x) {
        return String.valueOf(x);
    }

    @ChalkFunction
    public String fine(String text) {
        return text;
    }
}
