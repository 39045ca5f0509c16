package ai.chalk.compute.server.egress;

import java.net.IDN;
import java.util.Locale;

/**
 * An entry of a policy's {@code allowed_hosts}: an exact host name ({@code api.openai.com}), or a wildcard
 * {@code *.slack.com} that matches every name below {@code slack.com} (at any depth) but not {@code slack.com} itself,
 * as a certificate's wildcard does not either. Names compare case-insensitively, without a trailing dot; an IP literal
 * matches only itself.
 *
 * @param pattern the entry, normalized (lower case, no trailing dot)
 */
public record HostPattern(String pattern) {

    public HostPattern {
        pattern = normalize(pattern);
        String name = pattern.startsWith("*.") ? pattern.substring(2) : pattern;
        if (name.isEmpty() || name.contains("*") || !name.matches("[a-z0-9._:\\[\\]-]+")) {
            throw new IllegalArgumentException("allowed_hosts entry \"" + pattern + "\" is not a host name or a"
                    + " wildcard such as *.example.com (a '*' is allowed only as the whole first label)");
        }
    }

    /** Parses an {@code allowed_hosts} key. */
    public static HostPattern of(String entry) {
        return new HostPattern(entry);
    }

    /** Whether {@code host} (a name or an IP literal, any case) is matched. */
    public boolean matches(String host) {
        String h = normalize(host);
        if (isWildcard()) {
            String suffix = pattern.substring(1); // ".slack.com"
            return h.endsWith(suffix) && h.length() > suffix.length();
        }
        return h.equals(pattern);
    }

    /** Whether this is a {@code *.} wildcard. */
    public boolean isWildcard() {
        return pattern.startsWith("*.");
    }

    /** How specific the entry is: an exact name beats every wildcard, a longer wildcard a shorter one. */
    int specificity() {
        return isWildcard() ? pattern.length() : Integer.MAX_VALUE;
    }

    /** Lower case, ASCII (an internationalized name in its punycode form), without a trailing dot. */
    static String normalize(String host) {
        String h = host.strip();
        if (h.endsWith(".")) {
            h = h.substring(0, h.length() - 1);
        }
        if (h.startsWith("[") && h.endsWith("]")) {
            h = h.substring(1, h.length() - 1);
        }
        try {
            h = IDN.toASCII(h, IDN.ALLOW_UNASSIGNED);
        } catch (IllegalArgumentException e) {
            // not a valid name: kept as given, so that it matches nothing but itself
        }
        return h.toLowerCase(Locale.ROOT);
    }

    @Override
    public String toString() {
        return pattern;
    }
}
