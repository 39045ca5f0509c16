package ai.chalk.compute.server.egress;

import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/** How a rule's {@code match} compares one text (a path, a query key or value, a header name or value). */
public sealed interface TextMatcher permits TextMatcher.Exact, TextMatcher.StartsWith, TextMatcher.Regex {

    boolean matches(String text);

    /** The whole text equals {@code text}. */
    record Exact(String text) implements TextMatcher {
        @Override
        public boolean matches(String s) {
            return s.equals(text);
        }
    }

    /** The text begins with {@code prefix}. */
    record StartsWith(String prefix) implements TextMatcher {
        @Override
        public boolean matches(String s) {
            return s.startsWith(prefix);
        }
    }

    /** The whole text matches {@code pattern} (Java syntax, anchored at both ends). */
    record Regex(Pattern pattern) implements TextMatcher {

        /** Compiles {@code regex}; {@link IllegalArgumentException} naming {@code field} when it does not compile. */
        public static Regex of(String field, String regex) {
            try {
                return new Regex(Pattern.compile(regex));
            } catch (PatternSyntaxException e) {
                throw new IllegalArgumentException(field + ": the regex does not compile: " + e.getDescription());
            }
        }

        @Override
        public boolean matches(String s) {
            return pattern.matcher(s).matches();
        }
    }
}
