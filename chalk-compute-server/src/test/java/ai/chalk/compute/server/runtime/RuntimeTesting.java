package ai.chalk.compute.server.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** Helpers for tests that drive any {@link SandboxRuntime}. */
public final class RuntimeTesting {

    private static final AtomicInteger IDS = new AtomicInteger();

    private RuntimeTesting() {}

    public static String newId() {
        return "t" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
    }

    /** A spec with the runtime's default image, workdir {@code /workspace} and no network. */
    public static SandboxSpec spec(Map<String, String> env, ResourceLimits limits) {
        return new SandboxSpec(newId(), "", env, "/workspace", limits, false, List.of());
    }

    public static SandboxSpec spec() {
        return spec(Map.of(), ResourceLimits.NONE);
    }

    public static ProcessSpec command(String command, String... args) {
        return new ProcessSpec(command, Arrays.asList(args), Optional.empty(), Map.of(), Optional.empty());
    }

    public static ProcessSpec sh(String script) {
        return command("/bin/sh", "-c", script);
    }

    /** A finished process: how it ended and everything it printed. */
    public record Run(ExitStatus status, String out, String err) {
        public int code() {
            assertThat(status.exitCode())
                    .as("exit code of a run that printed %s / %s", out, err)
                    .isPresent();
            return status.exitCode().getAsInt();
        }

        public Run ok() {
            assertThat(status)
                    .as("status of a run that printed:\n%s\nstderr:\n%s", out, err)
                    .isEqualTo(ExitStatus.exited(0));
            return this;
        }
    }

    public static Run run(RuntimeSandbox sandbox, ProcessSpec spec) throws Exception {
        RuntimeProcess p = sandbox.exec(spec);
        p.stdin().close();
        return collect(p);
    }

    public static Run sh(RuntimeSandbox sandbox, String script) throws Exception {
        return run(sandbox, sh(script));
    }

    public static Run collect(RuntimeProcess p) throws Exception {
        CompletableFuture<String> out = drain(p.stdout());
        CompletableFuture<String> err = drain(p.stderr());
        ExitStatus status = p.onExit().get(60, TimeUnit.SECONDS);
        return new Run(status, out.get(10, TimeUnit.SECONDS), err.get(10, TimeUnit.SECONDS));
    }

    public static CompletableFuture<String> drain(InputStream in) {
        return CompletableFuture.supplyAsync(() -> {
            // what came before an error (a PTY's EIO is its end) is kept
            ByteArrayOutputStream seen = new ByteArrayOutputStream();
            byte[] buf = new byte[8192];
            try (in) {
                for (int n; (n = in.read(buf)) >= 0; ) {
                    seen.write(buf, 0, n);
                }
            } catch (IOException e) {
                // the end
            }
            return seen.toString(StandardCharsets.UTF_8);
        });
    }

    /** Reads one line (without its end) from a process's output. */
    public static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int b;
        while ((b = in.read()) >= 0 && b != '\n') {
            line.write(b);
        }
        return line.toString(StandardCharsets.UTF_8).trim();
    }

    /** Reads output into {@code seen} until it contains {@code text}, for at most 10 seconds. */
    public static void readUntil(InputStream in, StringBuilder seen, String text) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        byte[] buf = new byte[4096];
        while (!seen.toString().contains(text)) {
            assertThat(System.nanoTime()).as("waiting for %s in %s", text, seen).isLessThan(deadline);
            int n = in.read(buf);
            assertThat(n)
                    .as("end of output while waiting for %s in %s", text, seen)
                    .isPositive();
            seen.append(new String(buf, 0, n, StandardCharsets.UTF_8));
        }
    }

    /**
     * How many processes inside the sandbox have exactly the command line {@code commandLine}, counted by a shell
     * in the sandbox from its own {@code /proc} (zombies, whose command line is empty, do not count).
     */
    public static int processesInSandbox(RuntimeSandbox sandbox, String commandLine) throws Exception {
        Run r = run(
                        sandbox,
                        command(
                                "/bin/sh",
                                "-c",
                                "n=0; for f in /proc/[0-9]*/cmdline; do "
                                        + "c=$(tr '\\0' ' ' < \"$f\" 2>/dev/null); [ \"${c% }\" = \"$1\" ] && n=$((n+1)); done; echo $n",
                                "count",
                                commandLine))
                .ok();
        return Integer.parseInt(r.out().trim());
    }

    /** Host processes whose command line is exactly {@code commandLine} (zombies excluded). */
    public static List<Long> hostProcessesRunning(String commandLine) {
        List<Long> found = new ArrayList<>();
        try (var dirs = Files.newDirectoryStream(Path.of("/proc"))) {
            for (Path d : dirs) {
                String name = d.getFileName().toString();
                if (!name.chars().allMatch(Character::isDigit)) {
                    continue;
                }
                try {
                    String cmd = new String(Files.readAllBytes(d.resolve("cmdline")), StandardCharsets.UTF_8)
                            .replace('\0', ' ')
                            .trim();
                    String stat = Files.readString(d.resolve("stat"), StandardCharsets.ISO_8859_1);
                    char state = stat.charAt(stat.lastIndexOf(')') + 2);
                    if (cmd.equals(commandLine) && state != 'Z' && state != 'X') {
                        found.add(Long.parseLong(name));
                    }
                } catch (IOException e) {
                    // gone meanwhile
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        return found;
    }
}
