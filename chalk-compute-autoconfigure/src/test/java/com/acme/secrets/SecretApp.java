package com.acme.secrets;

import ai.chalk.compute.function.ChalkFunction;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.context.annotation.Bean;

/**
 * An application (in its own package, out of WorkerApp's component scan) whose function asks for a Chalk secret that the
 * embedded server's environment does not have, so the server refuses to deploy it: a deployment failure that comes from
 * the server.
 */
@SpringBootConfiguration(proxyBeanMethods = false)
public class SecretApp {

    @Bean
    Tokens tokens() {
        return new Tokens();
    }

    /** A function bean needing a secret. */
    public static class Tokens {

        @ChalkFunction(secrets = "API_KEY")
        public String token(String user) {
            return "token-" + user;
        }
    }
}
