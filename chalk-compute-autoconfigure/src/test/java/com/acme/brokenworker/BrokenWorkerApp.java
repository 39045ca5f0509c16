package com.acme.brokenworker;

import ai.chalk.compute.function.ChalkFunction;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.context.annotation.Bean;

/**
 * An application that deploys fine but whose workers cannot boot: a bean its function depends on in worker mode
 * fails, as a missing database or configuration would. Its function keeps one replica warm, so the failure shows at once.
 */
@SpringBootApplication
public class BrokenWorkerApp {

    public static void main(String[] args) {
        SpringApplication.run(BrokenWorkerApp.class, args);
    }

    @Bean
    Pinger pinger(ObjectProvider<LedgerConnection> ledger) {
        ledger.getIfAvailable(); // opened in replicas only, where the function needs it
        return new Pinger();
    }

    @Bean
    @ConditionalOnBooleanProperty("chalk.compute.functions.worker")
    LedgerConnection ledgerConnection() {
        throw new IllegalStateException("ledger database unreachable from the worker");
    }

    /** What the function depends on in a replica. */
    public static class LedgerConnection {}

    /** One warm function. */
    public static class Pinger {
        @ChalkFunction(minReplicas = 1)
        public String ping() {
            return "pong";
        }
    }
}
