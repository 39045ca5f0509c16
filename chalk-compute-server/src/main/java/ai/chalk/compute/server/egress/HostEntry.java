package ai.chalk.compute.server.egress;

import java.util.List;

/**
 * An allowed host and its rules. A host with rules has its HTTPS intercepted (the proxy terminates TLS with a
 * certificate of the server's CA, applies the rules, and connects to the host itself); one without is tunnelled
 * untouched once the TLS client hello names it.
 *
 * @param pattern the host, or a {@code *.} wildcard
 * @param rules   its rules, in order; empty for none
 */
public record HostEntry(HostPattern pattern, List<HttpRule> rules) {

    public HostEntry {
        rules = List.copyOf(rules);
    }

    /** Whether requests to this host are decrypted and rewritten. */
    public boolean intercepted() {
        return !rules.isEmpty();
    }
}
