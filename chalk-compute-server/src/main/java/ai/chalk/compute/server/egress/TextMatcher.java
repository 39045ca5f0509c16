package ai.chalk.compute.server.egress;

import ai.chalk.compute.server.regex.DeadlineCharSequence;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/** How a rule's {@code match} compares one text (a path, a query key or value, a header name or value). */
public sealed interface TextMatcher permits TextMatcher.Exact, TextMatcher.StartsWith, TextMatcher.Regex {

    /**
     * Whether {@code text} matches.
     *
     * @param deadlineNanos the {@link System#nanoTime()} by which a regex must have decided
     * @throws DeadlineCharSequence.DeadlineExceeded when a regex had not
     */
    boolean matches(String text, long deadlineNanos);

    /** The whole text equals {@code text}. */
    record Exact(String text) implements TextMatcher {
        @Override
        public boolean matches(String s, long deadlineNanos) {
            return s.equals(text);
        }
    }

    /** The text begins with {@code prefix}. */
    record StartsWith(String prefix) implements TextMatcher {
        @Override
        public boolean matches(String s, long deadlineNanos) {
            return s.startsWith(prefix);
        }
    }

    /**
     * The whole text matches {@code pattern} (Java syntax, anchored at both ends). The pattern is the tenant's and the
     * text the sandbox's: a pattern that backtracks catastrophically on the text sent, {@code (a+)+\1$} on 40 a's and
     * a '!', held a thread of the proxy, which every tenant's sandboxes share, for good; it now gives up at the
     * deadline.
     */
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
        public boolean matches(String s, long deadlineNanos) {
            return pattern.matcher(new DeadlineCharSequence(s, deadlineNanos)).matches();
        }
    }
}
