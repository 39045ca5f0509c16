package com.acme.functions;

import ai.chalk.compute.function.ChalkClass;
import ai.chalk.compute.function.ChalkFunction;
import java.util.List;

/** A class deployment as a bean: its methods are named after the class. */
@ChalkClass
public class Embedder {

    @ChalkFunction
    public List<Float> embed(String text) {
        return List.of((float) text.length());
    }
}
