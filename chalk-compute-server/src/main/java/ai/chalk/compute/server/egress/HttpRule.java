package ai.chalk.compute.server.egress;

import java.net.URI;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * One rule of an allowed host ({@code NetworkPolicyRule}): for the requests it {@linkplain #match matches}, headers to
 * set (from the policy's {@code headers}, or from secrets resolved by the server: {@code headers_secrets}), placeholders
 * to replace by secrets' values inside header values (the SDK's {@code add_credentials}), and another URL to send the
 * request to. Header values never print: they may be credentials.
 *
 * @param match        which requests it applies to
 * @param setHeaders   header name to the value it gets, replacing any the request had (in any case)
 * @param placeholders text that stands for a secret in the sandbox, to the secret's value
 * @param forwardUrl   where matching requests go instead: its scheme, host and port, its path prepended to the
 *                     request's
 */
public record HttpRule(
        RequestMatch match,
        Map<String, SecretText> setHeaders,
        Map<String, SecretText> placeholders,
        Optional<URI> forwardUrl) {

    public HttpRule {
        setHeaders = Collections.unmodifiableMap(new LinkedHashMap<>(setHeaders));
        placeholders = Collections.unmodifiableMap(new LinkedHashMap<>(placeholders));
        placeholders.keySet().forEach(p -> {
            if (p.isEmpty()) {
                throw new IllegalArgumentException("a credential placeholder is empty");
            }
        });
        forwardUrl.ifPresent(u -> {
            if (!"http".equals(u.getScheme()) && !"https".equals(u.getScheme()) || u.getHost() == null) {
                throw new IllegalArgumentException(
                        "forward_url " + u + " must be an absolute http:// or https:// URL with a host");
            }
        });
    }

    @Override
    public String toString() {
        return "HttpRule[match=" + match + ", setHeaders=" + setHeaders.keySet() + ", placeholders="
                + placeholders.size() + ", forwardUrl=" + forwardUrl + "]";
    }
}
