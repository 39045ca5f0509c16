package ai.chalk.compute.network;

import java.util.Objects;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * How a {@link RequestMatch} compares one text: a path, a query parameter's name or value, a header's name or value.
 * Header names compare in any case.
 */
public sealed interface TextMatch permits TextMatch.Exact, TextMatch.StartsWith, TextMatch.Regex {

    /**
     * The whole text equals {@code text}.
     *
     * @param text the text
     * @return the match
     */
    static TextMatch exact(String text) {
        return new Exact(text);
    }

    /**
     * The text begins with {@code prefix}.
     *
     * @param prefix the prefix
     * @return the match
     */
    static TextMatch startsWith(String prefix) {
        return new StartsWith(prefix);
    }

    /**
     * The whole text matches a Java regular expression.
     *
     * @param regex the expression, anchored at both ends
     * @return the match
     * @throws IllegalArgumentException when it does not compile
     */
    static TextMatch regex(String regex) {
        return new Regex(regex);
    }

    /**
     * An exact match.
     *
     * @param text the text
     */
    record Exact(String text) implements TextMatch {
        /** Checks for null. */
        public Exact {
            Objects.requireNonNull(text, "text");
        }
    }

    /**
     * A prefix match.
     *
     * @param prefix the prefix
     */
    record StartsWith(String prefix) implements TextMatch {
        /** Checks for null. */
        public StartsWith {
            Objects.requireNonNull(prefix, "prefix");
        }
    }

    /**
     * A regular-expression match.
     *
     * @param regex the expression
     */
    record Regex(String regex) implements TextMatch {
        /** Checks that the expression compiles. */
        public Regex {
            Objects.requireNonNull(regex, "regex");
            try {
                Pattern.compile(regex);
            } catch (PatternSyntaxException e) {
                throw new IllegalArgumentException("regex " + regex + " does not compile: " + e.getDescription(), e);
            }
        }
    }
}
