package ai.chalk.compute.network;

import ai.chalk.compute.secret.Secret;
import java.net.URI;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * What the egress proxy does to requests to one allowed host: headers it sets, with literal values or with a secret's
 * value (which the workload never sees), and another URL to send the request to; for the requests a
 * {@link RequestMatch} selects, every request by default. A host with rules has its HTTPS decrypted by the proxy (the
 * workload trusts the proxy's CA), so that the rules can apply. An immutable value; each {@code with…} returns a
 * copy.
 * <pre>{@code
 * NetworkPolicy.none().rule("api.openai.com",
 *         NetworkRule.headerFromSecret("Authorization", Secret.fromChalkEnv("OPENAI_BEARER"))
 *                 .withHeader("OpenAI-Organization", "org-acme")
 *                 .when(RequestMatch.pathStartsWith("/v1/")))
 * }</pre>
 *
 * @param match         which requests it applies to
 * @param headers       header name to a literal value, set on the request (replacing any it had)
 * @param headerSecrets header name to the secret giving its value: a Chalk secret, or a local variable saved as one
 * @param forwardUrl    where matching requests go instead: its scheme, host and port, its path before the request's
 */
public record NetworkRule(
        RequestMatch match,
        Map<String, String> headers,
        Map<String, Secret> headerSecrets,
        Optional<String> forwardUrl) {

    private static final Pattern TOKEN = Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]+");

    /** Checks the values and copies the maps. */
    public NetworkRule {
        Objects.requireNonNull(match, "match");
        headers.forEach((name, value) -> {
            checkName(name);
            if (value.indexOf('\r') >= 0 || value.indexOf('\n') >= 0) {
                throw new IllegalArgumentException("the value of header " + name + " contains a line break");
            }
        });
        headerSecrets.forEach((name, secret) -> {
            checkName(name);
            Credential.secretName(secret, "the secret of header " + name);
        });
        headers = Collections.unmodifiableMap(new LinkedHashMap<>(headers));
        headerSecrets = Collections.unmodifiableMap(new LinkedHashMap<>(headerSecrets));
        forwardUrl.ifPresent(u -> {
            URI uri;
            try {
                uri = URI.create(u);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("forward URL " + u + " is not a URL", e);
            }
            if (!("http".equals(uri.getScheme()) || "https".equals(uri.getScheme())) || uri.getHost() == null) {
                throw new IllegalArgumentException("forward URL " + u + " must be an absolute http:// or https:// URL");
            }
        });
    }

    /**
     * A rule setting header {@code name} to {@code value} on every request.
     *
     * @param name  the header's name
     * @param value its value
     * @return the rule
     */
    public static NetworkRule header(String name, String value) {
        return new NetworkRule(RequestMatch.any(), Map.of(name, value), Map.of(), Optional.empty());
    }

    /**
     * A rule setting header {@code name} to a secret's value on every request; the workload never sees the value.
     *
     * @param name   the header's name, such as {@code "Authorization"}
     * @param secret a Chalk secret ({@link Secret#fromChalkEnv}) or a local variable ({@link Secret#fromLocalEnv},
     *               saved as a managed secret when the workload is created)
     * @return the rule
     */
    public static NetworkRule headerFromSecret(String name, Secret secret) {
        return new NetworkRule(RequestMatch.any(), Map.of(), Map.of(name, secret), Optional.empty());
    }

    /**
     * A rule sending every request to {@code url} instead: its scheme, host and port, with its path before the
     * request's ({@code https://gateway.internal/openai} turns {@code /v1/chat} into {@code /openai/v1/chat}).
     *
     * @param url an absolute http:// or https:// URL
     * @return the rule
     */
    public static NetworkRule forward(String url) {
        return new NetworkRule(RequestMatch.any(), Map.of(), Map.of(), Optional.of(url));
    }

    /**
     * This rule also setting header {@code name} to {@code value}.
     *
     * @param name  the header's name
     * @param value its value
     * @return the new rule
     */
    public NetworkRule withHeader(String name, String value) {
        Map<String, String> h = new LinkedHashMap<>(headers);
        h.put(name, value);
        return new NetworkRule(match, h, headerSecrets, forwardUrl);
    }

    /**
     * This rule also setting header {@code name} to a secret's value.
     *
     * @param name   the header's name
     * @param secret the secret
     * @return the new rule
     */
    public NetworkRule withHeaderFromSecret(String name, Secret secret) {
        Map<String, Secret> h = new LinkedHashMap<>(headerSecrets);
        h.put(name, secret);
        return new NetworkRule(match, headers, h, forwardUrl);
    }

    /**
     * This rule also sending requests to {@code url}; see {@link #forward(String)}.
     *
     * @param url the URL
     * @return the new rule
     */
    public NetworkRule withForward(String url) {
        return new NetworkRule(match, headers, headerSecrets, Optional.of(url));
    }

    /**
     * This rule for the requests {@code match} selects only.
     *
     * @param match which requests
     * @return the new rule
     */
    public NetworkRule when(RequestMatch match) {
        return new NetworkRule(match, headers, headerSecrets, forwardUrl);
    }

    private static void checkName(String name) {
        if (name == null || !TOKEN.matcher(name).matches()) {
            throw new IllegalArgumentException("\"" + name + "\" is not an HTTP header name");
        }
    }

    /** Names the headers, never their values. */
    @Override
    public String toString() {
        return "NetworkRule[match=" + match + ", headers=" + headers.keySet() + ", headerSecrets=" + headerSecrets
                + ", forwardUrl=" + forwardUrl + "]";
    }
}
