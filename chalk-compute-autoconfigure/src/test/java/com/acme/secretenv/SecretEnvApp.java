package com.acme.secretenv;

import ai.chalk.compute.function.ChalkFunction;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

/**
 * An application (in its own package) whose function bean names a Chalk secret its environment has: its replicas,
 * which boot this application, see the value in their environment.
 */
@SpringBootApplication(proxyBeanMethods = false)
public class SecretEnvApp {

    public static void main(String[] args) {
        SpringApplication.run(SecretEnvApp.class, args);
    }

    @Bean
    Keys keys() {
        return new Keys();
    }

    /** A function bean needing a secret. */
    public static class Keys {

        /** What the replica's environment holds for the secret, behind a prefix. */
        @ChalkFunction(secrets = "API_KEY")
        public String apiKey(String prefix) {
            return prefix + System.getenv("API_KEY");
        }
    }
}
