package com.acme;

import ai.chalk.compute.function.ChalkFunction;

/** The task of an evaluation whose judges grade the replies: it answers with the row's message, as given. */
public class Replies {

    @ChalkFunction
    public static String reply(String message) {
        return message;
    }
}
