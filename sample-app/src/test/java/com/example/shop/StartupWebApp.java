package com.example.shop;

import ai.chalk.compute.function.ChalkFunction;
import ai.chalk.compute.function.ChalkScorer;
import ai.chalk.compute.sandbox.SandboxClient;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.stereotype.Component;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * The application {@code ai.chalk.compute.sample.startup.StarterStartupBenchmark} times, as a user would write it (in
 * a package of its own, so that the sample application does not scan it): a web application with a REST
 * endpoint that runs a snippet in a sandbox, three functions and a scorer on a bean, and actuator. Without the starter
 * (its auto-configurations excluded) the same beans exist; the endpoint then answers that no client is configured.
 */
@SpringBootApplication
public class StartupWebApp {

    /** Runs a snippet in a fresh sandbox per request. */
    @RestController
    static class Snippets {

        private final ObjectProvider<SandboxClient> client;

        Snippets(ObjectProvider<SandboxClient> client) {
            this.client = client;
        }

        @GetMapping("/run")
        String run(@RequestParam String code) {
            SandboxClient sandboxes = client.getIfAvailable();
            if (sandboxes == null) {
                return "no Chalk Compute client";
            }
            var sandbox = sandboxes.create();
            try {
                return sandbox.exec("sh", "-c", code).stdoutText();
            } finally {
                sandbox.terminate();
            }
        }
    }

    /** Three functions and a scorer, discovered and deployed in the background by the starter. */
    @Component
    public static class Catalog {

        @ChalkFunction(description = "The price of an order line")
        public double price(String sku, int quantity) {
            return quantity * (sku.length() + 0.99);
        }

        @ChalkFunction(description = "A one-line quote")
        public String quote(String sku, int quantity) {
            return quantity + " x " + sku + " = " + price(sku, quantity);
        }

        @ChalkFunction(description = "Stock left")
        public int stock(String sku) {
            return sku.hashCode() & 0xff;
        }

        @ChalkScorer
        public double closeness(double output, double expected) {
            return 1.0 - Math.min(1.0, Math.abs(output - expected) / Math.max(1.0, Math.abs(expected)));
        }
    }
}
