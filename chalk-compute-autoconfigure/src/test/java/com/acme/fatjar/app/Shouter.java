package com.acme.fatjar.app;

import ai.chalk.compute.function.ChalkFunction;
import com.acme.fatjar.config.Salutation;
import org.springframework.stereotype.Component;

/** A bean with a function, using a bean only the application's own auto-configuration makes. */
@Component
public class Shouter {

    private final Salutation salutation;

    public Shouter(Salutation salutation) {
        this.salutation = salutation;
    }

    @ChalkFunction(description = "Greets loudly")
    public String shout(String name) {
        return salutation.text() + ", " + name.toUpperCase() + "!";
    }
}
