package com.acme.functions;

import ai.chalk.compute.function.ChalkFunction;

/** A bean with two functions whose types cannot travel, each for its own reason, and a valid one beside them. */
public class BadFns {

    @ChalkFunction
    public String bad(Object x) {
        return String.valueOf(x);
    }

    @ChalkFunction
    public Thread alsoBad(String name) {
        return new Thread(name);
    }

    @ChalkFunction
    public String fine(String text) {
        return text;
    }
}
