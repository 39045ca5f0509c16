package ai.chalk.compute.server.egress;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * A rule adds a credential only to the requests it matches: the destination must not read a matched request as one the
 * rule was written to leave out (the README's example scopes a token to paths under {@code /repos/}).
 */
class RequestRewriteTest {

    private static final RequestRewrite.Target TARGET = new RequestRewrite.Target(true, "api.example.com", 443, false);

    private static HttpRule keyFor(RequestMatch match) {
        return Policies.header(match, "X-Api-Key", "secret");
    }

    /** A rule that sets the key and sends every request to {@code url}. */
    private static HttpRule keyForwardedTo(String url) {
        return new HttpRule(
                RequestMatch.ANY,
                Map.of("X-Api-Key", new SecretText("secret")),
                Map.of(),
                Optional.of(java.net.URI.create(url)));
    }

    /** The header the rules added to a GET of {@code uri}, or null. */
    private static String added(String uri, HttpRule rule) {
        HttpRequest request = new DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, uri);
        RequestRewrite.apply(request, List.of(rule), TARGET);
        return request.headers().get("X-Api-Key");
    }

    @Test
    void aPathThatMayMeanAnotherToTheHostMatchesNoRuleOnPaths() {
        HttpRule v1 = keyFor(
                new RequestMatch(Optional.of(new TextMatcher.StartsWith("/v1/")), Set.of(), List.of(), List.of()));
        assertThat(added("/v1/repos", v1)).isEqualTo("secret");
        assertThat(added("/v2/repos", v1)).isNull();
        for (String path : List.of(
                "/v1/../admin",
                "/v1/./x",
                "/v1/%2e%2e/admin",
                "/v1/%2E%2e/admin",
                "/v1/..%2fadmin",
                "/v1/..%5cadmin",
                "/v1/..\\admin",
                "/v1/x;/../../admin")) {
            assertThat(added(path, v1)).as(path).isNull();
        }
        // rules that do not look at paths take any, and such a path still goes (GitLab's group%2Frepo, say)
        assertThat(added("/a/../b", keyFor(RequestMatch.ANY))).isEqualTo("secret");
        assertThat(added("/projects/group%2Frepo", keyFor(RequestMatch.ANY))).isEqualTo("secret");
    }

    @Test
    void aQueryConditionHoldsForEveryParameterOfItsKey() {
        HttpRule readOnly = keyFor(new RequestMatch(
                Optional.empty(),
                Set.of(),
                List.of(new RequestMatch.KeyValueMatch(
                        Optional.of(new TextMatcher.Exact("mode")), Optional.of(new TextMatcher.Exact("readonly")))),
                List.of()));
        assertThat(added("/q?mode=readonly", readOnly)).isEqualTo("secret");
        assertThat(added("/q?other=1&mode=readonly", readOnly)).isEqualTo("secret");
        // servers differ on which of two values they read
        assertThat(added("/q?mode=readonly&mode=write", readOnly)).isNull();
        assertThat(added("/q?mode=write&mode=readonly", readOnly)).isNull();
        // ';' does not start another parameter, as most servers read it
        assertThat(added("/q?mode=readonly;mode=write", readOnly)).isNull();
        // some servers read keys in any case, and a parameter past any count is still read
        assertThat(added("/q?mode=readonly&MODE=write", readOnly)).isNull();
        assertThat(added("/q?mode=readonly" + "&p=1".repeat(1100) + "&mode=write", readOnly))
                .isNull();
    }

    @Test
    void aSecretIsNeverPutIntoARequestThatLeavesTheProxyUnencrypted() {
        RequestRewrite.Target plain = new RequestRewrite.Target(false, "api.example.com", 80, false);
        HttpRule credential = Policies.credential("PLACEHOLDER-1", "sk-live-1");
        // a credential's placeholder in a header, plain or inside a Basic credential: refused, the request untouched
        java.util.Base64.Encoder base64 = java.util.Base64.getEncoder();
        Map<String, String> secretFor = Map.of(
                "Bearer PLACEHOLDER-1",
                "Bearer sk-live-1",
                "Basic " + base64.encodeToString("user:PLACEHOLDER-1".getBytes(StandardCharsets.UTF_8)),
                "Basic " + base64.encodeToString("user:sk-live-1".getBytes(StandardCharsets.UTF_8)));
        secretFor.forEach((value, secret) -> {
            HttpRequest request = new DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, "/v1");
            request.headers().set("Authorization", value);
            assertThatThrownBy(() -> RequestRewrite.apply(request, List.of(credential), plain))
                    .isInstanceOfSatisfying(
                            RequestRewrite.InTheClear.class,
                            e -> assertThat(e.reason())
                                    .isEqualTo(
                                            "the network policy adds a credential or a header of its rules to this request,"
                                                    + " which would go to http://api.example.com:80 unencrypted: what the policy adds"
                                                    + " is only sent over TLS (use https://)"));
            assertThat(request.headers().get("Authorization")).isEqualTo(value);
            // the same over TLS gets the secret
            RequestRewrite.apply(request, List.of(credential), TARGET);
            assertThat(request.headers().get("Authorization")).isEqualTo(secret);
        });
        // a request without the placeholder gets no secret, so it goes in the clear as it is
        HttpRequest without = new DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, "/v1");
        without.headers().set("Authorization", "Bearer mine");
        assertThat(RequestRewrite.apply(without, List.of(credential), plain)).isEqualTo(plain);
        assertThat(without.headers().get("Authorization")).isEqualTo("Bearer mine");
        // a header the rules set holds a secret too
        HttpRequest any = new DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, "/v1");
        assertThatThrownBy(() -> RequestRewrite.apply(any, List.of(keyFor(RequestMatch.ANY)), plain))
                .isInstanceOf(RequestRewrite.InTheClear.class);
        assertThat(any.headers().get("X-Api-Key")).isNull();
        // where the request goes decides: forwarded to http://, refused; to https://, the secret goes over TLS
        HttpRule toPlain = keyForwardedTo("http://internal.example.com/api");
        HttpRequest refused = new DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, "/v1");
        refused.headers().set("Host", "api.example.com");
        assertThatThrownBy(() -> RequestRewrite.apply(refused, List.of(toPlain), TARGET))
                .isInstanceOf(RequestRewrite.InTheClear.class);
        assertThat(refused.uri()).isEqualTo("/v1");
        assertThat(refused.headers().names()).containsExactly("Host");
        assertThat(refused.headers().get("Host")).isEqualTo("api.example.com");
        HttpRule toTls = keyForwardedTo("https://internal.example.com/api");
        HttpRequest forwarded = new DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, "/v1");
        assertThat(RequestRewrite.apply(forwarded, List.of(toTls), plain))
                .isEqualTo(new RequestRewrite.Target(true, "internal.example.com", 443, true));
        assertThat(forwarded.headers().get("X-Api-Key")).isEqualTo("secret");
        assertThat(forwarded.uri()).isEqualTo("/api/v1");
    }
}
