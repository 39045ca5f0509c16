package com.acme;

import ai.chalk.compute.function.ChalkFunction;

/** Functions that read their replica's environment: what a deployed function's secrets became. */
public class SecretReader {

    /** The value of an environment variable of the replica, or "unset". */
    @ChalkFunction(
            secrets = {"API_KEY=FN_SECRET"},
            minReplicas = 0,
            maxReplicas = 1)
    public String readEnv(String name) {
        String value = System.getenv(name);
        return value == null ? "unset" : value;
    }
}
