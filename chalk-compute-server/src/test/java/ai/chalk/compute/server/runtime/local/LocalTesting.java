package ai.chalk.compute.server.runtime.local;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.ExitStatus;
import ai.chalk.compute.server.runtime.ProcessSpec;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import ai.chalk.compute.server.runtime.host.HostTools;
import ai.chalk.compute.server.runtime.host.Procfs;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

/** Helpers shared by the local runtime tests. */
final class LocalTesting {

    private static final AtomicInteger IDS = new AtomicInteger();

    private LocalTesting() {}

    static String newId() {
        return "t" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
    }

    static SandboxSpec spec() {
        return spec(Map.of(), ResourceLimits.NONE);
    }

    static SandboxSpec spec(Map<String, String> env, ResourceLimits limits) {
        return new SandboxSpec(newId(), "", env, "/workspace", limits, false, List.of());
    }

    static ProcessSpec command(String command, String... args) {
        return new ProcessSpec(command, Arrays.asList(args), Optional.empty(), Map.of(), Optional.empty());
    }

    static ProcessSpec sh(String script) {
        return command("/bin/sh", "-c", script);
    }

    /** A finished process: how it ended and everything it printed. */
    record Run(ExitStatus status, String out, String err) {
        int code() {
            assertThat(status.exitCode())
                    .as("exit code of a run that printed %s / %s", out, err)
                    .isPresent();
            return status.exitCode().getAsInt();
        }

        Run ok() {
            assertThat(status)
                    .as("status of a run that printed:\n%s\nstderr:\n%s", out, err)
                    .isEqualTo(ExitStatus.exited(0));
            return this;
        }
    }

    static Run run(RuntimeSandbox sandbox, ProcessSpec spec) throws Exception {
        RuntimeProcess p = sandbox.exec(spec);
        p.stdin().close();
        return collect(p);
    }

    static Run sh(RuntimeSandbox sandbox, String script) throws Exception {
        return run(sandbox, sh(script));
    }

    static Run collect(RuntimeProcess p) throws Exception {
        CompletableFuture<String> out = drain(p.stdout());
        CompletableFuture<String> err = drain(p.stderr());
        ExitStatus status = p.onExit().get(60, TimeUnit.SECONDS);
        return new Run(status, out.get(10, TimeUnit.SECONDS), err.get(10, TimeUnit.SECONDS));
    }

    static CompletableFuture<String> drain(InputStream in) {
        return CompletableFuture.supplyAsync(() -> {
            try (in) {
                return new String(in.readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                return "";
            }
        });
    }

    /** Host processes whose command line is exactly {@code commandLine}. */
    static List<Long> hostProcessesRunning(String commandLine) {
        return Procfs.allPids().stream()
                .filter(pid -> Procfs.commandLine(pid).equals(commandLine) && Procfs.running(pid))
                .collect(Collectors.toList());
    }

    /**
     * A directory holding links to the util-linux tools but not to bubblewrap, to stand for a host without it.
     */
    static String pathWithout(Path dir, String... missing) {
        try {
            Files.createDirectories(dir);
            for (String tool : List.of("bwrap", "unshare", "nsenter", "setpriv", "setsid", "env", "perl")) {
                if (Arrays.asList(missing).contains(tool)) {
                    continue;
                }
                Optional<Path> real = HostTools.which(tool, LocalRuntime.DEFAULT_PATH);
                if (real.isPresent()) {
                    Files.createSymbolicLink(dir.resolve(tool), real.get());
                }
            }
            return dir.toString();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Runs a host command (a test's own set-up), failing with its output unless it exits 0. */
    static String runOrFail(String... command) throws IOException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            if (p.waitFor() != 0) {
                throw new IOException(String.join(" ", command) + " failed: " + out);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
        return out;
    }
}
