package com.acme.functions;

/** A plain bean a function bean depends on, to show functions run on the bean Spring made. */
public class Greeting {

    private final String prefix;

    public Greeting(String prefix) {
        this.prefix = prefix;
    }

    public String greet(String name) {
        return prefix + ", " + name;
    }
}
