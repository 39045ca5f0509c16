package com.acme;

import ai.chalk.compute.function.ChalkFunction;
import ai.chalk.compute.function.Default;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** A function taking every kind of value the Arrow mapping knows, for schema conversion tests. */
public class AllTypes {

    public record Point(double x, double y) {}

    @ChalkFunction(description = "Takes everything")
    public static String everything(
            boolean flag,
            byte b,
            short s,
            int i,
            @Default("7") long l,
            float f,
            double d,
            String text,
            byte[] bytes,
            Instant at,
            LocalDateTime local,
            LocalDate day,
            Duration took,
            BigDecimal amount,
            List<String> tags,
            Map<String, Integer> counts,
            Point point,
            Optional<Long> maybe) {
        return text;
    }
}
