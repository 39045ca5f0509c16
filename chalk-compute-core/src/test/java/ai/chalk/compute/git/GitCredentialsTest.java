package ai.chalk.compute.git;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.sandbox.Command;
import ai.chalk.compute.sandbox.ExecEvent;
import ai.chalk.compute.sandbox.ExecProcess;
import ai.chalk.compute.sandbox.ExecResult;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * HTTP(S) credentials scoped to one git command, against a real smart-HTTP git server
 * ({@code git http-backend} behind basic authentication, a small Python server) running in the same
 * sandbox and reached over the sandbox's own loopback (sandboxes have no other network). The
 * transport is plain HTTP: the credential handling in git and in the helpers is the same as for
 * HTTPS, which only adds TLS underneath.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class GitCredentialsTest {

    static final String USER = "agent";
    /** Characters that would break naive quoting, and an '@' that would break a URL. */
    static final String PASSWORD = "s3cr3t p@ss'\"$word;`x`&|<>";

    static final String URL = "http://127.0.0.1:8418/private.git";

    /** The git server: {@code git http-backend} behind basic authentication; prints READY when listening. */
    static final String SERVER_SCRIPT = """
            # A tiny smart-HTTP git server for tests: git http-backend behind HTTP basic authentication.
            # Paths under /slow/ are served after a delay.
            #
            # Usage: GIT_HTTP_USER=... GIT_HTTP_PASSWORD=... python3 git-http-server.py PROJECT_ROOT PORT
            # Prints READY once it listens on 127.0.0.1:PORT. Logs each request's method, path and whether it was
            # authorized to stderr (never the Authorization header itself).
            import base64
            import os
            import subprocess
            import sys
            import time
            from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

            ROOT = sys.argv[1]
            PORT = int(sys.argv[2])
            USER = os.environ["GIT_HTTP_USER"]
            EXPECTED = "Basic " + base64.b64encode(
                (USER + ":" + os.environ["GIT_HTTP_PASSWORD"]).encode("utf-8")).decode("ascii")


            class Handler(BaseHTTPRequestHandler):
                def do_GET(self):
                    self.serve()

                def do_POST(self):
                    self.serve()

                def read_body(self):
                    if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                        body = b""
                        while True:
                            size = int(self.rfile.readline().strip(), 16)
                            if size == 0:
                                self.rfile.readline()
                                return body
                            body += self.rfile.read(size)
                            self.rfile.readline()
                    return self.rfile.read(int(self.headers.get("Content-Length") or 0))

                def serve(self):
                    body = self.read_body()
                    authorized = self.headers.get("Authorization") == EXPECTED
                    sys.stderr.write("%s %s authorized=%s\\n" % (self.command, self.path, authorized))
                    sys.stderr.flush()
                    if not authorized:
                        self.send_response(401)
                        self.send_header("WWW-Authenticate", 'Basic realm="git"')
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    path, _, query = self.path.partition("?")
                    if path.startswith("/slow/"):
                        # slow responses, so a test can look at the client's processes while it waits
                        time.sleep(1)
                        path = path[len("/slow"):]
                    env = dict(os.environ,
                               GIT_PROJECT_ROOT=ROOT, GIT_HTTP_EXPORT_ALL="1", PATH_INFO=path, QUERY_STRING=query,
                               REQUEST_METHOD=self.command, REMOTE_USER=USER, REMOTE_ADDR="127.0.0.1",
                               CONTENT_TYPE=self.headers.get("Content-Type", ""), CONTENT_LENGTH=str(len(body)))
                    for header, variable in (("Content-Encoding", "HTTP_CONTENT_ENCODING"), ("Git-Protocol", "GIT_PROTOCOL")):
                        if self.headers.get(header):
                            env[variable] = self.headers[header]
                    out = subprocess.run(["git", "http-backend"], input=body, env=env, stdout=subprocess.PIPE).stdout
                    separator = b"\\r\\n\\r\\n" if b"\\r\\n\\r\\n" in out else b"\\n\\n"
                    head, _, payload = out.partition(separator)
                    status = 200
                    headers = []
                    for line in head.decode("latin-1").splitlines():
                        name, _, value = line.partition(":")
                        if name.lower() == "status":
                            status = int(value.split()[0])
                        else:
                            headers.append((name, value.strip()))
                    self.send_response(status)
                    for name, value in headers:
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)

                def log_message(self, *args):
                    pass


            server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
            print("READY", flush=True)
            server.serve_forever()
            """;

    ComputeServer server;
    SandboxClient client;
    Sandbox sandbox;
    ExecProcess httpServer;
    SandboxGit git;

    @BeforeAll
    void start(@TempDir Path dataDir) throws Exception {
        server = ComputeServer.builder().dataDir(dataDir).build().start();
        client = SandboxClient.inProcess(server.inProcessName());
        sandbox = client.create();
        git = sandbox.git();
        sandbox.files().writeText("/srv/git-http-server.py", SERVER_SCRIPT);
        sh(SandboxGitTest.SEED_IDENTITY + """
                set -e
                git init -q --bare -b main /srv/git/private.git
                git -C /srv/git/private.git config http.receivepack true
                git init -q -b main /srv/seed && cd /srv/seed
                echo private > secret-project.txt && git add . && git commit -qm one
                git remote add origin /srv/git/private.git && git push -q origin main
                """);
        httpServer = sandbox.execStart(Command.of("python3", "/srv/git-http-server.py", "/srv/git", "8418")
                .env("GIT_HTTP_USER", USER)
                .env("GIT_HTTP_PASSWORD", PASSWORD));
        Iterator<ExecEvent> events = httpServer.output().iterator();
        StringBuilder output = new StringBuilder();
        while (!output.toString().contains("READY")) {
            assertThat(events.hasNext()).as("the git server starts: %s", output).isTrue();
            ExecEvent event = events.next();
            output.append(
                    event.stdoutText() != null
                            ? event.stdoutText()
                            : event.stderrText() != null ? event.stderrText() : "");
        }
    }

    @AfterAll
    void stop() {
        if (httpServer != null) {
            httpServer.close();
        }
        if (client != null) {
            client.close();
        }
        if (server != null) {
            server.close();
        }
    }

    String sh(String script, String... args) {
        List<String> argv = new ArrayList<>(List.of("-c", script, "sh"));
        argv.addAll(List.of(args));
        ExecResult result = sandbox.exec(Command.of("sh", argv));
        assertThat(result.success()).as("%s: %s", script, result.stderrText()).isTrue();
        return result.stdoutText();
    }

    /** Whether the password (or its URL-encoded form) appears anywhere under a directory of the sandbox. */
    boolean passwordStoredUnder(String directory) {
        String encoded = URLEncoder.encode(PASSWORD, StandardCharsets.UTF_8);
        ExecResult grep = sandbox.exec("grep", "-rqF", "-e", PASSWORD, "-e", encoded, "--", directory);
        assertThat(grep.exitCode()).as("grep: %s", grep.stderrText()).isIn(0, 1);
        return grep.exitCode() == 0;
    }

    static void assertNoPasswordIn(GitException error) {
        assertThat(error.getMessage()).doesNotContain(PASSWORD).doesNotContain("p@ss");
        assertThat(error.stderr()).doesNotContain(PASSWORD).doesNotContain("p@ss");
        assertThat(error.stdout()).doesNotContain(PASSWORD).doesNotContain("p@ss");
        assertThat(String.join(" ", error.command()))
                .doesNotContain(PASSWORD)
                .doesNotContain("p@ss")
                .doesNotContain("p%40ss");
    }

    @Test
    void withoutCredentialsTheServerRefusesAndNothingPrompts() {
        assertThatThrownBy(() -> git.clone(URL, "anonymous"))
                .isInstanceOf(GitException.class)
                .hasMessageContaining("could not read Username")
                .satisfies(e -> assertThat(((GitException) e).exitCode()).isEqualTo(128));
        assertThat(sandbox.files().exists("anonymous")).isFalse();
    }

    @Test
    void aWrongPasswordFailsWithoutShowingIt() {
        String wrong = "wrong " + PASSWORD;
        assertThatThrownBy(() -> git.clone(CloneOptions.of(URL, "wrong").credentials(USER, wrong)))
                .isInstanceOf(GitException.class)
                .hasMessageContaining("Authentication failed")
                .satisfies(e -> {
                    GitException error = (GitException) e;
                    assertNoPasswordIn(error);
                    assertThat(error.command())
                            .containsExactly("git", "clone", "-q", "--depth", "1", "--", URL, "wrong");
                });
        assertThat(sandbox.files().exists("wrong")).isFalse();
    }

    @Test
    void credentialsAreScopedToEachCommandAndNeverStored() {
        git.clone(CloneOptions.of(URL, "repo").credentials(USER, PASSWORD).fullHistory());
        assertThat(sandbox.files().readText("repo/secret-project.txt")).isEqualTo("private\n");

        // the remote URL is unchanged and the password is stored nowhere: repository, config, home
        assertThat(git.remoteGet("repo", "origin")).isEqualTo(URL);
        assertThat(sandbox.files().readText("repo/.git/config"))
                .doesNotContain(PASSWORD)
                .doesNotContain(USER);
        assertThat(sandbox.exec(Command.of("git", "config", "--list", "--show-origin")
                                .workdir("/workspace/repo"))
                        .stdoutText())
                .doesNotContain(PASSWORD)
                .doesNotContain(USER);
        assertThat(sandbox.exec(Command.of("git", "config", "--local", "--list").workdir("/workspace/repo"))
                        .stdoutText())
                .doesNotContain("credential");
        assertThat(passwordStoredUnder("/workspace")).isFalse();
        assertThat(passwordStoredUnder("/root")).isFalse();
        assertThat(sandbox.files().exists("/root/.git-credentials")).isFalse();
        assertThat(sandbox.files().exists("/root/.gitconfig")).isFalse();

        // new work on the server: a fetch without credentials fails, so none were kept
        sh(SandboxGitTest.SEED_IDENTITY + "set -e; cd /srv/seed; echo more >> secret-project.txt; "
                + "git commit -qam more; git push -q origin main");
        assertThatThrownBy(() -> git.fetch("repo"))
                .isInstanceOf(GitException.class)
                .satisfies(e -> assertNoPasswordIn((GitException) e));

        SandboxGit authenticated = git.withCredentials(USER, PASSWORD);
        authenticated.fetch("repo");
        assertThat(git.status("repo").behind()).hasValue(1);
        authenticated.pull("repo");
        assertThat(sandbox.files().readText("repo/secret-project.txt")).isEqualTo("private\nmore\n");

        git.configureUser("repo", "Agent", "agent@example.com");
        sandbox.files().writeText("repo/from-sandbox.txt", "pushed over HTTP\n");
        git.add("repo", "from-sandbox.txt");
        String commit = git.commit("repo", "from the sandbox");
        assertThatThrownBy(() -> git.push("repo")).isInstanceOf(GitException.class);
        authenticated.push("repo");
        assertThat(sh("git -C /srv/git/private.git rev-parse main").strip()).isEqualTo(commit);

        assertThat(passwordStoredUnder("/workspace"))
                .as("after fetch, pull and push")
                .isFalse();
        assertThat(passwordStoredUnder("/root")).isFalse();
    }

    @Test
    void thePasswordIsNeverOnACommandLine() throws Exception {
        // clone through a slow path of the server, and look at every command line in the sandbox meanwhile
        var clone = java.util.concurrent.CompletableFuture.runAsync(
                () -> git.withCredentials(USER, PASSWORD).clone("http://127.0.0.1:8418/slow/private.git", "watched"));
        boolean sawGit = false;
        while (!clone.isDone()) {
            ExecResult scan = sandbox.exec(
                    Command.shell("for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < \"$f\"; echo; done 2>/dev/null"));
            assertThat(scan.stdoutText()).doesNotContain(PASSWORD).doesNotContain("p@ss");
            sawGit |= scan.stdoutText().contains("slow/private.git");
            Thread.sleep(100);
        }
        clone.get();
        assertThat(sawGit).as("the scan ran while git was running").isTrue();
        assertThat(sandbox.files().readText("watched/secret-project.txt")).startsWith("private");
    }

    @Test
    void aFailedCredentialedCommandMasksThePassword() {
        git.clone(CloneOptions.of(URL, "masked").credentials(USER, PASSWORD));
        // a push the server rejects (not a fast-forward), made with the password
        sh(SandboxGitTest.SEED_IDENTITY + "set -e; cd /srv/seed; git pull -q --ff-only origin main; "
                + "echo diverge >> secret-project.txt; git commit -qam diverge; git push -q origin main");
        sh(SandboxGitTest.SEED_IDENTITY + "set -e; cd masked; echo local > local.txt; git add local.txt; "
                + "git commit -qm local");
        assertThatThrownBy(() -> git.withCredentials(USER, PASSWORD).push("masked"))
                .isInstanceOf(GitException.class)
                .hasMessageContaining("rejected")
                .satisfies(e -> assertNoPasswordIn((GitException) e));

        // a password put in a URL is masked wherever the helpers show the command or git's output
        String inUrl = "http://" + USER + ":" + URLEncoder.encode(PASSWORD, StandardCharsets.UTF_8)
                + "@127.0.0.1:1/unreachable.git";
        assertThatThrownBy(() -> git.withCredentials(USER, PASSWORD).clone(inUrl, "unreachable"))
                .isInstanceOf(GitException.class)
                .satisfies(e -> {
                    GitException error = (GitException) e;
                    assertNoPasswordIn(error);
                    assertThat(error.getMessage()).doesNotContain(URLEncoder.encode(PASSWORD, StandardCharsets.UTF_8));
                    assertThat(error.command()).contains("http://agent:****@127.0.0.1:1/unreachable.git");
                });
    }
}
