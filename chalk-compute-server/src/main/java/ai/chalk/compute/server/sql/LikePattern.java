package ai.chalk.compute.server.sql;

import ai.chalk.compute.server.error.ComputeException;

/**
 * A Flight SQL filter pattern ({@code %} any run, {@code _} one character, the rest literal, case ignored), matched
 * without backtracking: in time proportional to the pattern's length times the name's, whatever the pattern. As a
 * regular expression ({@code .*} per {@code %}), forty {@code %} and a character no name holds made one call of a
 * caller with nothing but a login spin a server core for good.
 */
record LikePattern(String pattern) {

    /** The longest pattern taken: a schema or table name is far shorter. */
    static final int MAX_LENGTH = 1024;

    /**
     * The pattern {@code text}.
     *
     * @throws ComputeException {@code INVALID_ARGUMENT} past {@value #MAX_LENGTH} characters
     */
    static LikePattern of(String text) {
        if (text.length() > MAX_LENGTH) {
            throw ComputeException.invalid(
                    "a filter pattern is at most " + MAX_LENGTH + " characters; this one is " + text.length());
        }
        return new LikePattern(text);
    }

    /** Whether {@code name} matches the whole pattern. */
    boolean matches(String name) {
        int p = 0;
        int n = 0;
        int star = -1; // the last % seen, and where in the name its run then ended
        int resume = 0;
        while (n < name.length()) {
            if (p < pattern.length() && pattern.charAt(p) == '%') {
                star = p++;
                resume = n;
            } else if (p < pattern.length() && (pattern.charAt(p) == '_' || same(pattern.charAt(p), name.charAt(n)))) {
                p++;
                n++;
            } else if (star >= 0) {
                // the last % takes one more character; earlier ones never need to (the classic wildcard match)
                p = star + 1;
                n = ++resume;
            } else {
                return false;
            }
        }
        while (p < pattern.length() && pattern.charAt(p) == '%') {
            p++;
        }
        return p == pattern.length();
    }

    private static boolean same(char a, char b) {
        return a == b
                || Character.toLowerCase(a) == Character.toLowerCase(b)
                || Character.toUpperCase(a) == Character.toUpperCase(b);
    }
}
