package ai.chalk.compute.server.runtime.local;

import static ai.chalk.compute.server.egress.Policies.cidr;
import static ai.chalk.compute.server.egress.Policies.credential;
import static ai.chalk.compute.server.egress.Policies.deny;
import static ai.chalk.compute.server.egress.Policies.forward;
import static ai.chalk.compute.server.egress.Policies.header;
import static ai.chalk.compute.server.egress.Policies.hosts;
import static ai.chalk.compute.server.egress.Policies.route;
import static ai.chalk.compute.server.egress.Policies.with;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.server.egress.EgressPolicy;
import ai.chalk.compute.server.egress.EgressWorld;
import ai.chalk.compute.server.egress.PortRange;
import ai.chalk.compute.server.egress.RequestMatch;
import ai.chalk.compute.server.egress.TextMatcher;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Untrusted code in a sandbox whose network policy allows a few hosts, against the egress proxy, in both isolation
 * modes: what the policy allows works (by name, wildcard and route, through the proxy variables and without them),
 * everything else fails (other hosts, denied routes, direct connections to any address, IPv6, UDP, raw sockets, names
 * outside the policy), and a credential reaches only the hosts it was added for, only in headers, while the sandbox
 * never holds it. The destinations are servers in a network namespace of the test's own ({@link EgressWorld}).
 */
class LocalEgressSecurityTest {

    private static final String SECRET = "sk-live-4a7f9c2e81d0b3f5";
    private static final String PLACEHOLDER = "CHALK_PLACEHOLDER_OPENAI_API_KEY";

    private static EgressWorld world;
    private static Path temp;
    private static final Map<String, LocalRuntime> runtimes = new HashMap<>();
    private final List<RuntimeSandbox> sandboxes = new ArrayList<>();

    @BeforeAll
    static void startWorld() throws Exception {
        world = EgressWorld.start();
        temp = Files.createTempDirectory("chalk-egress-runtimes");
    }

    @AfterAll
    static void stopWorld() throws Exception {
        runtimes.values().forEach(LocalRuntime::close);
        runtimes.clear();
        if (world != null) {
            world.close();
        }
        if (temp != null) {
            ai.chalk.compute.server.runtime.host.NoFollowDelete.delete(temp);
        }
    }

    @BeforeEach
    void forget() throws Exception {
        world.clear();
    }

    @AfterEach
    void terminate() {
        sandboxes.forEach(s -> s.terminate(Duration.ZERO));
    }

    private static synchronized LocalRuntime runtime(String mode) {
        return runtimes.computeIfAbsent(mode, m -> {
            LocalRuntime.Builder b = LocalRuntime.builder(temp.resolve("state-" + m))
                    .isolation(LocalIsolation.REQUIRED)
                    .egress(world.options());
            if (m.equals("unshare")) {
                b.toolPath(LocalTesting.pathWithout(temp.resolve("path-" + m), "bwrap"));
            }
            LocalRuntime r = b.build();
            assertThat(r.isolation().level()).isEqualTo(m);
            return r;
        });
    }

    private RuntimeSandbox start(String mode, EgressPolicy policy, Map<String, String> env) throws Exception {
        Map<String, String> all = new HashMap<>(env);
        all.put("TEST_CA", world.caPem);
        RuntimeSandbox s = runtime(mode)
                .start(new SandboxSpec(
                                LocalTesting.newId(), "", all, "/workspace", ResourceLimits.NONE, false, List.of())
                        .withEgress(policy));
        sandboxes.add(s);
        LocalTesting.sh(s, "printf '%s' \"$TEST_CA\" > /tmp/testca.pem").ok();
        return s;
    }

    private RuntimeSandbox start(String mode, EgressPolicy policy) throws Exception {
        return start(mode, policy, Map.of());
    }

    private static LocalTesting.Run sh(RuntimeSandbox s, String script) throws Exception {
        return LocalTesting.sh(s, script);
    }

    /** Runs {@code script} with python3 in the sandbox, {@code args} after it. */
    private static LocalTesting.Run py(RuntimeSandbox s, String script, String... args) throws Exception {
        List<String> a = new ArrayList<>(List.of("-c", script));
        a.addAll(List.of(args));
        return LocalTesting.run(s, LocalTesting.command("python3", a.toArray(String[]::new)));
    }

    /** curl's exit code and HTTP status, then the body (and stderr) of one request. */
    private static String curl(RuntimeSandbox s, String args) throws Exception {
        LocalTesting.Run r = sh(s, "curl -sS --max-time 20 -w '\\n%{http_code}' " + args + "; echo \" exit=$?\"");
        return r.out() + r.err();
    }

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare"})
    void anAllowedHostIsReachedAndEveryOtherIsRefused(String mode) throws Exception {
        RuntimeSandbox s = start(mode, hosts("api.allowed.test"));
        assertThat(curl(s, "--cacert /tmp/testca.pem https://api.allowed.test/hello"))
                .contains("\"sni\": \"api.allowed.test\"", "\"ok\": true", "200 exit=0");
        assertThat(curl(s, "http://api.allowed.test/plain")).contains("\"path\": \"/plain\"", "200 exit=0");
        String refused = curl(s, "-i http://other.test/");
        assertThat(refused)
                .contains("403", "X-Chalk-Egress: refused", "network policy", "other.test is not in allowed_hosts")
                .contains("allowed_hosts api.allowed.test");
        assertThat(curl(s, "--cacert /tmp/testca.pem https://other.test/"))
                .contains("CONNECT tunnel failed, response 403")
                .doesNotContain("exit=0");
        assertThat(world.receivedFor("other.test")).isEmpty();
        // the sandbox is told where the proxy is, and trusts its CA
        assertThat(sh(
                                s,
                                "echo $HTTPS_PROXY; echo $https_proxy; echo $NO_PROXY; head -1 $SSL_CERT_FILE;"
                                        + " grep -c 'BEGIN CERTIFICATE' /chalk/egress/ca.pem")
                        .ok()
                        .out())
                .containsPattern("http://10\\.199\\.[0-9]+\\.[0-9]+:3128\\n")
                .contains("localhost,127.0.0.1,::1");
    }

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare"})
    void aWildcardCoversNamesBelowItButNotItself(String mode) throws Exception {
        RuntimeSandbox s = start(mode, hosts("*.wild.test"));
        assertThat(curl(s, "--cacert /tmp/testca.pem https://x.wild.test/")).contains("200 exit=0");
        assertThat(curl(s, "--cacert /tmp/testca.pem https://deep.x.wild.test/"))
                .contains("200 exit=0");
        assertThat(curl(s, "http://wild.test/")).contains("403").contains("wild.test is not in allowed_hosts");
        assertThat(curl(s, "http://evilwild.test/")).contains("403");
    }

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare"})
    void aDeniedRouteWinsOverAnAllowedHostAndAnAllowedRoute(String mode) throws Exception {
        String a = world.farA.getHostAddress();
        String b = world.farB.getHostAddress();
        EgressPolicy policy = deny(
                route(
                        hosts("denied.test", "other.test"),
                        world.farA.getHostAddress() + "/29",
                        new PortRange(8443, 8443)),
                cidr(world.farB));
        RuntimeSandbox s = start(mode, policy);
        assertThat(curl(s, "--cacert /tmp/testca.pem https://other.test/")).contains("200 exit=0");
        assertThat(curl(s, "--cacert /tmp/testca.pem https://denied.test/"))
                .contains("CONNECT tunnel failed, response 403");
        assertThat(curl(s, "-i http://denied.test/")).contains("403", "which denied_routes covers");
        // the route: its port only, and not its denied address
        assertThat(curl(s, "--cacert /tmp/testca.pem https://" + a + ":8443/")).contains("200 exit=0");
        assertThat(curl(s, "--cacert /tmp/testca.pem https://" + b + ":8443/")).contains("response 403");
        assertThat(curl(s, "-i http://" + a + ":8080/")).contains("403", "no allowed_routes entry covers");
        assertThat(world.received())
                .allSatisfy(r -> assertThat(r.get("local").asText()).isNotEqualTo(b));
    }

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare"})
    void aCredentialBecomesTheSecretOnlyInHeadersToItsHostsAndTheSandboxNeverHoldsIt(String mode) throws Exception {
        EgressPolicy policy = with(hosts("other.test"), "api.allowed.test", credential(PLACEHOLDER, SECRET));
        RuntimeSandbox s = start(mode, policy, Map.of("OPENAI_API_KEY", PLACEHOLDER));
        assertThat(
                        curl(
                                s,
                                "-H \"Authorization: Bearer $OPENAI_API_KEY\" -H \"X-Both: a-$OPENAI_API_KEY-b\""
                                        + " \"https://api.allowed.test/v1/chat?key=$OPENAI_API_KEY\" --data \"b=$OPENAI_API_KEY\""))
                .contains("200 exit=0")
                .doesNotContain(SECRET);
        assertThat(curl(s, "-u \"me:$OPENAI_API_KEY\" https://api.allowed.test/basic"))
                .contains("200 exit=0");
        // in the clear the secret would cross the network readable: refused, never sent
        assertThat(curl(s, "-u \"me:$OPENAI_API_KEY\" http://api.allowed.test/clear"))
                .contains("only sent over TLS", "403 exit=0");
        assertThat(curl(
                        s,
                        "--cacert /tmp/testca.pem -H \"Authorization: Bearer $OPENAI_API_KEY\""
                                + " https://other.test/unlisted"))
                .contains("200 exit=0");

        JsonNode chat = only(world.receivedFor("api.allowed.test"), "/v1/chat?key=" + PLACEHOLDER);
        assertThat(headerOf(chat, "Authorization")).isEqualTo("Bearer " + SECRET);
        assertThat(headerOf(chat, "X-Both")).isEqualTo("a-" + SECRET + "-b");
        assertThat(chat.get("path").asText()).doesNotContain(SECRET);
        assertThat(chat.get("body").asText()).isEqualTo("b=" + PLACEHOLDER);
        JsonNode basic = only(world.receivedFor("api.allowed.test"), "/basic");
        assertThat(new String(
                        Base64.getDecoder()
                                .decode(headerOf(basic, "Authorization").substring(6)),
                        StandardCharsets.UTF_8))
                .isEqualTo("me:" + SECRET);
        assertThat(world.receivedFor("api.allowed.test"))
                .noneMatch(r -> r.get("path").asText().equals("/clear"));
        JsonNode unlisted = only(world.receivedFor("other.test"), "/unlisted");
        assertThat(headerOf(unlisted, "Authorization")).isEqualTo("Bearer " + PLACEHOLDER);
        assertThat(world.received().toString()).containsOnlyOnce("Bearer " + SECRET);

        // nothing in the sandbox holds the value: its environment, every process's, its files, what it was sent
        sh(s, "sleep 300 >/dev/null 2>&1 & echo started").ok();
        LocalTesting.Run look = sh(
                s,
                "env; cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' '\\n';"
                        + " grep -rs -l sk-live /chalk /etc /tmp /var/tmp /workspace /root /run 2>/dev/null | head; true");
        assertThat(look.out() + look.err()).contains(PLACEHOLDER).doesNotContain(SECRET);
    }

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare"})
    void aRedirectToAnotherHostCarriesThePlaceholderNeverTheSecret(String mode) throws Exception {
        EgressPolicy policy = with(hosts("other.test"), "api.allowed.test", credential(PLACEHOLDER, SECRET));
        RuntimeSandbox s = start(mode, policy, Map.of("OPENAI_API_KEY", PLACEHOLDER));
        // urllib follows redirects with every header of the request, as a careless client does
        String py = "import os, ssl, urllib.request\n"
                + "ctx = ssl.create_default_context(cafile=os.environ['SSL_CERT_FILE'])\n"
                + "ctx.load_verify_locations('/tmp/testca.pem')\n"
                + "opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=ctx))\n"
                + "req = urllib.request.Request('https://api.allowed.test/redirect?to=https://other.test/landing',"
                + " headers={'Authorization': 'Bearer ' + os.environ['OPENAI_API_KEY']})\n"
                + "print(opener.open(req, timeout=20).read().decode())\n";
        assertThat(py(s, py).ok().out()).contains("/landing");
        assertThat(headerOf(
                        only(world.receivedFor("api.allowed.test"), "/redirect?to=https://other.test/landing"),
                        "Authorization"))
                .isEqualTo("Bearer " + SECRET);
        assertThat(headerOf(only(world.receivedFor("other.test"), "/landing"), "Authorization"))
                .isEqualTo("Bearer " + PLACEHOLDER);
    }

    /** Connects to each {@code host:port} argument, printing {@code OPEN} or why not. */
    private static final String CONNECT = "import socket, sys\n"
            + "for h, p in [(a, int(b)) for a, b in (x.rsplit(':', 1) for x in sys.argv[1:])]:\n"
            + "    try:\n"
            + "        socket.create_connection((h, p), 3).close(); print(h, p, 'OPEN')\n"
            + "    except OSError as e:\n"
            + "        print(h, p, 'failed', type(e).__name__, e.errno)\n";

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare"})
    void aSandboxWithFullNetworkReachesNoOtherSandboxsProxy(String mode) throws Exception {
        // started first, so that the other's link address is the host's only after this one's rules were written:
        // slirp4netns connects from the host, where the proxy tells sandboxes apart by the address reached
        RuntimeSandbox open = runtime(mode)
                .start(new SandboxSpec(
                        LocalTesting.newId(), "", Map.of(), "/workspace", ResourceLimits.NONE, true, List.of()));
        sandboxes.add(open);
        RuntimeSandbox policed =
                start(mode, with(hosts("other.test"), "api.allowed.test", credential(PLACEHOLDER, SECRET)));
        String proxy = sh(policed, "echo ${HTTP_PROXY#http://}").ok().out().strip();
        String link = proxy.substring(0, proxy.lastIndexOf(':'));
        LocalTesting.Run r = py(open, CONNECT, proxy, link + ":53", link + ":22");
        assertThat(r.out()).as(r.err()).doesNotContain("OPEN");
        assertThat(r.out().lines().filter(l -> l.contains("failed")).count()).isEqualTo(3);
        assertThat(curl(policed, "--cacert /tmp/testca.pem https://other.test/still"))
                .as("the other sandbox's proxy still serves it")
                .contains("200 exit=0");
    }

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare"})
    void directConnectionsGoNowhereButAllowedNamesWorkWithoutTheProxyVariables(String mode) throws Exception {
        RuntimeSandbox s = start(mode, with(hosts("other.test"), "api.allowed.test", credential(PLACEHOLDER, SECRET)));
        String proxy =
                sh(s, "echo ${HTTP_PROXY#http://} | cut -d: -f1").ok().out().strip();
        String targets = String.join(
                " ",
                world.farA.getHostAddress() + ":443",
                world.farB.getHostAddress() + ":80",
                world.hostEnd.getHostAddress() + ":80",
                "8.8.8.8:53",
                "127.0.0.1:3128",
                proxy + ":22",
                proxy + ":8080",
                "169.254.169.254:80");
        LocalTesting.Run r = py(s, CONNECT, targets.split(" "));
        assertThat(r.out()).as(r.err()).doesNotContain("OPEN").contains("failed ConnectionRefusedError");
        assertThat(r.out().lines().filter(l -> l.contains("failed")).count()).isEqualTo(8);
        // a client that ignores the proxy variables resolves allowed names to the proxy, which checks them again
        assertThat(curl(s, "--noproxy '*' --cacert /tmp/testca.pem https://other.test/direct"))
                .contains("\"sni\": \"other.test\"", "200 exit=0");
        assertThat(curl(s, "--noproxy '*' https://api.allowed.test/direct")).contains("200 exit=0");
        assertThat(curl(s, "--noproxy '*' http://api.allowed.test/direct")).contains("200 exit=0");
        assertThat(curl(s, "--noproxy '*' http://evil.test/")).contains("Could not resolve host");
        // and a client that asks for an allowed name at an address of its choosing goes nowhere
        assertThat(curl(
                        s,
                        "--noproxy '*' --cacert /tmp/testca.pem --connect-to other.test:443:"
                                + world.farA.getHostAddress() + ":443 https://other.test/"))
                .doesNotContain("exit=0");
    }

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare"})
    void theHostHeaderAndTheTlsNameCannotDifferFromTheAllowedHost(String mode) throws Exception {
        RuntimeSandbox s =
                start(mode, with(hosts("other.test"), "api.allowed.test", header(RequestMatch.ANY, "X-Team", "blue")));
        assertThat(curl(s, "-i -H 'Host: evil.test' https://api.allowed.test/fronted"))
                .contains("403", "its Host header names evil.test, but the TLS connection is to api.allowed.test");
        String proxy =
                sh(s, "echo ${HTTP_PROXY#http://} | cut -d: -f1").ok().out().strip();
        String py = "import socket, ssl, sys\n"
                + "proxy = sys.argv[1]\n"
                + "ctx = ssl.create_default_context(cafile='/tmp/testca.pem')\n"
                + "def tunnel(connect, sni):\n"
                + "    s = socket.create_connection((proxy, 3128), 5)\n"
                + "    s.sendall(('CONNECT %s HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n' % (connect, connect)).encode())\n"
                + "    head = s.recv(4096).decode()\n"
                + "    try:\n"
                + "        t = ctx.wrap_socket(s, server_hostname=sni)\n"
                + "        t.sendall(b'GET /tunnel HTTP/1.1\\r\\nHost: ' + sni.encode() + b'\\r\\n\\r\\n')\n"
                + "        return head.split(chr(13))[0] + ' / ' + t.recv(4096).decode().split(chr(13))[0]\n"
                + "    except (OSError, ssl.SSLError) as e:\n"
                + "        return head.split(chr(13))[0] + ' / closed ' + type(e).__name__\n"
                + "print('same', tunnel('other.test:443', 'other.test'))\n"
                + "print('mismatch', tunnel('other.test:443', 'evil.test'))\n"
                + "print('none', tunnel('other.test:443', None) if False else '')\n"
                + "try:\n"
                + "    t = ctx.wrap_socket(socket.create_connection((proxy, 443), 5), server_hostname='evil.test')\n"
                + "    print('port443 evil OPEN')\n"
                + "except (OSError, ssl.SSLError) as e:\n"
                + "    print('port443 evil closed', type(e).__name__)\n";
        String out = py(s, py, proxy).ok().out();
        assertThat(out)
                .contains("same HTTP/1.1 200 Connection established / HTTP/1.1 200 OK")
                .contains("mismatch HTTP/1.1 200 Connection established / closed")
                .contains("port443 evil closed");
        assertThat(world.receivedFor("evil.test")).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare"})
    void ipv6UdpRawSocketsAndNamesOutsideThePolicyGoNowhere(String mode) throws Exception {
        RuntimeSandbox s = start(mode, hosts("api.allowed.test", "v6only.test"));
        String proxy =
                sh(s, "echo ${HTTP_PROXY#http://} | cut -d: -f1").ok().out().strip();
        assertThat(sh(s, "cat /proc/net/if_inet6; ls /sys/class/net 2>/dev/null || true")
                        .out())
                .doesNotContain("egress0")
                .doesNotContain("fe80");
        String py = "import socket, sys\n"
                + "far, v6, proxy = sys.argv[1:4]\n"
                + "def attempt(what, f):\n"
                + "    try:\n"
                + "        f(); print(what, 'OPEN')\n"
                + "    except OSError as e:\n"
                + "        print(what, 'failed', type(e).__name__)\n"
                + "def udp(host, port, family=socket.AF_INET):\n"
                + "    u = socket.socket(family, socket.SOCK_DGRAM); u.settimeout(2)\n"
                + "    u.sendto(b'leak', (host, port)); u.recvfrom(100)\n"
                + "attempt('tcp6', lambda: socket.create_connection((v6, 443), 3))\n"
                + "attempt('udp-far', lambda: udp(far, 5353))\n"
                + "attempt('udp-proxy', lambda: udp(proxy, 5353))\n"
                + "attempt('udp6', lambda: udp(v6, 5353, socket.AF_INET6))\n"
                + "attempt('raw-icmp', lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))\n"
                + "attempt('raw-udp', lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP))\n"
                + "attempt('packet', lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0x0300))\n"
                + "for name in ['evil.test', 'api.allowed.test', 'v6only.test']:\n"
                + "    try:\n"
                + "        print('dns', name, sorted({a[4][0] for a in socket.getaddrinfo(name, 443)}))\n"
                + "    except socket.gaierror as e:\n"
                + "        print('dns', name, 'unknown')\n";
        String out = py(s, py, world.farA.getHostAddress(), world.farV6.getHostAddress(), proxy)
                .ok()
                .out();
        assertThat(out)
                .doesNotContain("OPEN")
                .contains("tcp6 failed", "udp-far failed", "udp-proxy failed", "udp6 failed")
                .contains("raw-icmp failed PermissionError", "raw-udp failed PermissionError")
                .contains("packet failed PermissionError")
                .contains("dns evil.test unknown")
                .contains("dns api.allowed.test ['" + proxy + "']")
                .contains("dns v6only.test ['" + proxy + "']");
        assertThat(sh(s, "getent hosts evil.test; echo exit=$?").out()).contains("exit=2");
        // what is allowed works over IPv6 from the proxy, whose network the sandbox never touches
        assertThat(curl(s, "--cacert /tmp/testca.pem https://v6only.test/")).contains("200 exit=0");
        assertThat(world.received()).noneMatch(r -> r.has("udp"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare"})
    void rulesSetHeadersWhereTheyMatchAndForwardElsewhere(String mode) throws Exception {
        RequestMatch postsToV1 =
                new RequestMatch(Optional.of(new TextMatcher.StartsWith("/v1/")), Set.of("post"), List.of(), List.of());
        RequestMatch flagged = new RequestMatch(
                Optional.empty(),
                Set.of(),
                List.of(),
                List.of(new RequestMatch.KeyValueMatch(
                        Optional.of(new TextMatcher.Exact("x-use")), Optional.of(new TextMatcher.Exact("yes")))));
        RequestMatch toForward = new RequestMatch(
                Optional.of(TextMatcher.Regex.of("path", "/fwd/[a-z]+")), Set.of(), List.of(), List.of());
        EgressPolicy policy = with(
                hosts(),
                "api.allowed.test",
                header(postsToV1, "X-Api-Key", SECRET),
                header(flagged, "X-Plain", "plain"),
                forward(toForward, "https://forward.test:8443/base"));
        RuntimeSandbox s = start(mode, policy);
        curl(s, "https://api.allowed.test/v1/get");
        curl(s, "-X POST https://api.allowed.test/v1/post");
        curl(s, "-H 'X-Use: yes' https://api.allowed.test/flagged");
        assertThat(curl(s, "https://api.allowed.test/fwd/abc?q=1")).contains("200 exit=0");
        assertThat(headerOf(only(world.receivedFor("api.allowed.test"), "/v1/get"), "X-Api-Key"))
                .isNull();
        assertThat(headerOf(only(world.receivedFor("api.allowed.test"), "/v1/post"), "X-Api-Key"))
                .isEqualTo(SECRET);
        assertThat(headerOf(only(world.receivedFor("api.allowed.test"), "/flagged"), "X-Plain"))
                .isEqualTo("plain");
        JsonNode forwarded = only(world.receivedFor("forward.test"), "/base/fwd/abc?q=1");
        assertThat(forwarded.get("port").asInt()).isEqualTo(8443);
        assertThat(forwarded.get("sni").asText()).isEqualTo("forward.test");
    }

    @Test
    void aPolicyNeedsIsolationAndIsRefusedWithoutIt() {
        LocalRuntime none = LocalRuntime.builder(temp.resolve("state-none"))
                .isolation(LocalIsolation.NONE)
                .build();
        try {
            assertThatThrownBy(() -> none.start(new SandboxSpec(
                                    LocalTesting.newId(), "", Map.of(), "/w", ResourceLimits.NONE, false, List.of())
                            .withEgress(hosts("api.allowed.test"))))
                    .isInstanceOf(RuntimeStartException.class)
                    .hasMessageContaining("network policy needs a network namespace");
        } finally {
            none.close();
        }
    }

    private static JsonNode only(List<JsonNode> received, String path) {
        List<JsonNode> matching = received.stream()
                .filter(r -> r.get("path").asText().equals(path))
                .toList();
        assertThat(matching).as("requests for %s among %s", path, received).hasSize(1);
        return matching.get(0);
    }

    private static String headerOf(JsonNode request, String name) {
        for (JsonNode h : request.get("headers")) {
            if (h.get(0).asText().equalsIgnoreCase(name)) {
                return h.get(1).asText();
            }
        }
        return null;
    }
}
