package com.acme.warm;

import ai.chalk.compute.function.ChalkFunction;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

/**
 * An application with one function that keeps a replica warm, so its deployment is followed by replicas starting:
 * the readiness steps of the progress display.
 */
@SpringBootApplication(proxyBeanMethods = false)
public class WarmApp {

    public static void main(String[] args) {
        SpringApplication.run(WarmApp.class, args);
    }

    @Bean
    Echo echo() {
        return new Echo();
    }

    /** One warm function. */
    public static class Echo {
        @ChalkFunction(minReplicas = 1)
        public String echo(String text) {
            return text;
        }
    }
}
