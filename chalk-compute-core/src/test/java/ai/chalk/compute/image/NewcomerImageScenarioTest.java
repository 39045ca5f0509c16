package ai.chalk.compute.image;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.git.GitStatus;
import ai.chalk.compute.progress.ProgressDisplay;
import ai.chalk.compute.progress.ProgressSettings;
import ai.chalk.compute.sandbox.Command;
import ai.chalk.compute.sandbox.ExecResult;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a newcomer writes on the embedded default (the local runtime, no Docker runtime involved): an image with apt
 * packages and a wheel of their own installed by pip (PyPI is not reachable here; Debian's mirror is), tmux run as
 * the SDK's "Add tmux" example does, a repository cloned from one kept in a volume by another sandbox; then the same
 * image again, which is a cache hit. The figures are printed for the benchmark record.
 */
class NewcomerImageScenarioTest {

    static final String DEBIAN = "chalk-compute-test/debian:bookworm";

    @TempDir
    Path dataDir;

    /** A pure-Python wheel built by the host's Python (its zipfile and hashlib), as a user's build would. */
    private static Path wheel(Path dir) throws Exception {
        String script = """
                import base64, hashlib, sys, zipfile
                out = sys.argv[1]
                files = {"greet/__init__.py": "def hello(name):\\n    return 'hello, ' + name\\n",
                         "greet-1.0.dist-info/METADATA": "Metadata-Version: 2.1\\nName: greet\\nVersion: 1.0\\n",
                         "greet-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"}
                rec = [p + ",sha256=" + base64.urlsafe_b64encode(hashlib.sha256(c.encode()).digest()).rstrip(b"=").decode()
                       + "," + str(len(c.encode())) for p, c in files.items()]
                files["greet-1.0.dist-info/RECORD"] = "\\n".join(rec + ["greet-1.0.dist-info/RECORD,,"]) + "\\n"
                with zipfile.ZipFile(out, "w") as z:
                    for p, c in files.items():
                        z.writestr(p, c)
                """;
        Path wheel = dir.resolve("greet-1.0-py3-none-any.whl");
        Process p = new ProcessBuilder("python3", "-c", script, wheel.toString())
                .inheritIO()
                .start();
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).isZero();
        return wheel;
    }

    private static String sh(Sandbox sandbox, String script) {
        ExecResult r = sandbox.exec("sh", "-c", script);
        assertThat(r.exitCode()).as("%s\n%s", script, r.stderrText()).isZero();
        return r.stdoutText();
    }

    @Test
    void aptPipTmuxAndGitOnTheEmbeddedDefault(@TempDir Path work) throws Exception {
        Image image = Image.base(DEBIAN)
                .aptInstall("tmux", "git", "python3-pip")
                .addLocalFile(wheel(work), "/opt/wheels/greet-1.0-py3-none-any.whl")
                .pipInstall("/opt/wheels/greet-1.0-py3-none-any.whl")
                .workdir("/workspace");
        ByteArrayOutputStream shown = new ByteArrayOutputStream();
        ProgressSettings plain =
                ProgressSettings.fromEnv(Map.of("CHALK_SANDBOX_TUI", "true")).withTerminal(false);
        try (ComputeServer server =
                        ComputeServer.builder().dataDir(dataDir).build().start();
                SandboxClient client = SandboxClient.inProcess(
                        server.inProcessName(), ProgressDisplay.of(plain, new PrintStream(shown, true, UTF_8)))) {
            assertThat(server.runtimeName()).isEqualTo("local");

            long t0 = System.nanoTime();
            Sandbox sandbox = client.create(Sandbox.builder().image(image).name("newcomer"));
            long firstCreateMs = (System.nanoTime() - t0) / 1_000_000;
            assertThat(new String(shown.toByteArray(), UTF_8))
                    .contains("Image build")
                    .contains("tmux");

            // the SDK's tmux example: a detached session, keys sent, the pane read back
            sh(sandbox, "tmux new-session -d -s main");
            sh(sandbox, "tmux send-keys -t main 'echo from-tmux' Enter");
            String pane = "";
            for (int i = 0; i < 50 && !pane.contains("\nfrom-tmux"); i++) {
                Thread.sleep(100);
                pane = sh(sandbox, "tmux capture-pane -p -t main");
            }
            assertThat(pane).contains("\nfrom-tmux");
            assertThat(sh(sandbox, "python3 -c 'import greet; print(greet.hello(\"chalk\"))'"))
                    .isEqualTo("hello, chalk\n");
            assertThat(sh(sandbox, "pwd")).isEqualTo("/workspace\n");

            // a repository kept in a volume by another sandbox, cloned with the git helpers
            client.volumes().create("repos");
            Sandbox origin = client.create(Sandbox.builder().image(image).mountVolume("repos", "/repos"));
            sh(
                    origin,
                    "git init -q -b main /tmp/src && cd /tmp/src && echo '# app' > README.md && git add README.md"
                            + " && git -c user.name=dev -c user.email=dev@example.com commit -qm init"
                            + " && git clone -q --bare /tmp/src /repos/app.git");
            origin.terminate();
            Sandbox cloner = client.create(Sandbox.builder().image(image).mountVolume("repos", "/repos"));
            cloner.git().clone("file:///repos/app.git", "/workspace/app");
            GitStatus status = cloner.git().status("/workspace/app");
            assertThat(status.currentBranch()).contains("main");
            assertThat(status.isClean()).isTrue();
            assertThat(cloner.files().readText("/workspace/app/README.md")).isEqualTo("# app\n");
            cloner.terminate();

            // the same image again: a cache hit, nothing built
            int mark = shown.size();
            long t1 = System.nanoTime();
            ImageBuild again = client.images().getOrBuild(image);
            long cacheHitMs = (System.nanoTime() - t1) / 1_000_000;
            assertThat(again.status()).isEqualTo(ImageBuildStatus.EXISTS);
            long t2 = System.nanoTime();
            Sandbox second = client.create(Sandbox.builder().image(image));
            long cachedCreateMs = (System.nanoTime() - t2) / 1_000_000;
            assertThat(second.exec(Command.of("tmux", "-V")).stdoutText()).startsWith("tmux ");
            assertThat(new String(shown.toByteArray(), mark, shown.size() - mark, UTF_8))
                    .as("a cache hit shows no build")
                    .doesNotContain("Image build");
            second.terminate();
            sandbox.terminate();
            System.out.printf(
                    "newcomer scenario (local runtime): first create with build %d ms; cache hit"
                            + " getOrBuild %d ms; create from the cached image %d ms%n",
                    firstCreateMs, cacheHitMs, cachedCreateMs);
        }
    }
}
