package com.acme;

import ai.chalk.compute.function.ChalkFunction;
import ai.chalk.compute.function.Default;
import ai.chalk.compute.function.Param;
import ai.chalk.compute.image.Image;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** Well-formed functions: static and instance, with options, defaults and nested types. */
public class Orders {

    public enum Tier {
        FREE,
        PRO
    }

    public record Order(String sku, int quantity, List<String> notes) {}

    private final String greeting;

    public Orders() {
        this("Hello, ");
    }

    public Orders(String greeting) {
        this.greeting = greeting;
    }

    @ChalkFunction(description = "Adds two numbers")
    public static int add(int a, int b) {
        return a + b;
    }

    @ChalkFunction(
            name = "search_orders",
            image = "eclipse-temurin:17-jre",
            cpu = "2",
            memory = "4Gi",
            env = {"MODE=fast", "EMPTY="},
            secrets = {"OPENAI_API_KEY"},
            minReplicas = 0,
            maxReplicas = 3,
            timeout = "5m",
            retries = 2,
            concurrency = 8)
    public static List<Order> search(
            String query, @Default("2") int limit, @Default("\"PRO\"") Tier tier, Optional<String> region) {
        List<Order> found = new ArrayList<>();
        for (int i = 0; i < limit; i++) {
            found.add(new Order(query + "-" + i, i, List.of(tier.name(), region.orElse("anywhere"))));
        }
        return found;
    }

    @ChalkFunction(imageFactory = "image")
    public String greet(@Param("who") String name) {
        return greeting + name;
    }

    @ChalkFunction(imageFactory = "com.acme.Images#gpu")
    public static String fail(String why) {
        throw new IllegalStateException(why);
    }

    public static Image image() {
        return Image.debianSlim().pipInstall("requests");
    }
}
