package ai.chalk.compute.server.egress;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpVersion;
import java.util.List;
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
}
