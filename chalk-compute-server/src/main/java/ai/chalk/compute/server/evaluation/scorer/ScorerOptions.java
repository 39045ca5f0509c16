package ai.chalk.compute.server.evaluation.scorer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * Reads one built-in scorer's options, each by its SDK name, checking its type; {@link #finish()} then refuses any
 * option the scorer does not have, so a misspelt option fails the evaluation instead of being ignored.
 */
final class ScorerOptions {

    private final String scorer;
    private final ObjectNode options;
    private final Set<String> known = new LinkedHashSet<>();

    ScorerOptions(String scorer, ObjectNode options) {
        this.scorer = scorer;
        this.options = options;
    }

    /** The {@code inputs} pair (or single column), candidate first. */
    List<String> inputs(List<String> defaults) {
        @Nullable JsonNode value = take("inputs");
        if (value == null || value.isNull()) {
            return defaults;
        }
        List<String> columns = new ArrayList<>();
        if (value.isTextual()) {
            columns.add(value.asText());
        } else if (value.isArray()) {
            for (JsonNode column : value) {
                if (!column.isTextual() || column.asText().isBlank()) {
                    throw invalid("inputs", "a list of column names");
                }
                columns.add(column.asText());
            }
        } else {
            throw invalid("inputs", "a list of column names");
        }
        if (columns.size() != defaults.size()) {
            throw new IllegalArgumentException(scorer + " takes " + defaults.size() + " input column"
                    + (defaults.size() == 1 ? "" : "s (the candidate, then the column it is compared against)")
                    + ", but inputs names " + columns.size() + ": " + columns);
        }
        return List.copyOf(columns);
    }

    boolean bool(String name, boolean defaultValue) {
        @Nullable JsonNode value = take(name);
        if (value == null || value.isNull()) {
            return defaultValue;
        }
        if (!value.isBoolean()) {
            throw invalid(name, "true or false");
        }
        return value.booleanValue();
    }

    double number(String name, double defaultValue) {
        @Nullable JsonNode value = take(name);
        if (value == null || value.isNull()) {
            return defaultValue;
        }
        if (!value.isNumber() || !Double.isFinite(value.doubleValue())) {
            throw invalid(name, "a number");
        }
        return value.doubleValue();
    }

    double nonNegative(String name, double defaultValue) {
        double value = number(name, defaultValue);
        if (value < 0) {
            throw invalid(name, "a number of at least 0");
        }
        return value;
    }

    @Nullable
    String string(String name, @Nullable String defaultValue) {
        @Nullable JsonNode value = take(name);
        if (value == null || value.isNull()) {
            return defaultValue;
        }
        if (!value.isTextual()) {
            throw invalid(name, "a string");
        }
        return value.asText();
    }

    /** A string option with a fixed set of values, compared without regard to case. */
    String choice(String name, String defaultValue, List<String> choices) {
        String value = string(name, defaultValue);
        String lower = value == null ? defaultValue : value.toLowerCase(Locale.ROOT);
        if (!choices.contains(lower)) {
            throw new IllegalArgumentException(
                    scorer + " option " + name + " is one of " + choices + ", not '" + value + "'");
        }
        return lower;
    }

    List<String> strings(String name) {
        @Nullable JsonNode value = take(name);
        if (value == null || value.isNull()) {
            return List.of();
        }
        if (value.isTextual()) {
            return List.of(value.asText());
        }
        if (!value.isArray()) {
            throw invalid(name, "a list of strings");
        }
        List<String> strings = new ArrayList<>();
        for (JsonNode element : value) {
            if (!element.isTextual()) {
                throw invalid(name, "a list of strings");
            }
            strings.add(element.asText());
        }
        return List.copyOf(strings);
    }

    /** Refuses the options the scorer did not read, naming those it has. */
    void finish() {
        List<String> unknown = new ArrayList<>();
        for (Iterator<String> names = options.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (!known.contains(name)) {
                unknown.add(name);
            }
        }
        if (!unknown.isEmpty()) {
            throw new IllegalArgumentException(scorer + " has no option" + (unknown.size() == 1 ? " " : "s ")
                    + String.join(", ", unknown) + "; its options are " + String.join(", ", known));
        }
    }

    private @Nullable JsonNode take(String name) {
        known.add(name);
        return options.get(name);
    }

    private IllegalArgumentException invalid(String name, String expected) {
        return new IllegalArgumentException(
                scorer + " option " + name + " must be " + expected + ", not " + options.get(name));
    }
}
