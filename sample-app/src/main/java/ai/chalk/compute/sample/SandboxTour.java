package ai.chalk.compute.sample;

import ai.chalk.compute.sandbox.Command;
import ai.chalk.compute.sandbox.ExecEvent;
import ai.chalk.compute.sandbox.ExecProcess;
import ai.chalk.compute.sandbox.ExecResult;
import ai.chalk.compute.sandbox.ExecStream;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.sandbox.Signal;
import java.io.PrintStream;
import java.time.Duration;
import org.springframework.boot.CommandLineRunner;
import org.springframework.stereotype.Component;

/**
 * What a newcomer does first: create a sandbox, run a command, stream a build, talk to a shell
 * through stdin, stop a process with a signal, and terminate. Prints what happens to stdout.
 */
@Component
public class SandboxTour implements CommandLineRunner {

    private final SandboxClient client;
    private final PrintStream out;

    public SandboxTour(SandboxClient client) {
        this.client = client;
        this.out = System.out;
    }

    @Override
    public void run(String... args) {
        Sandbox sandbox = client.create(Sandbox.builder().name("sample").cpu("1").memory("512Mi").env("GREETING", "hello"));
        out.println("1. created sandbox " + sandbox.id() + " (" + sandbox.info().state() + ")");
        try {
            ExecResult hello = sandbox.exec("sh", "-c", "echo \"$GREETING from $(hostname), pid $$\"");
            out.println("2. exec: " + hello.stdoutText().strip() + " (exit code " + hello.exitCode() + ")");

            out.println("3. streaming a build:");
            try (ExecStream build = sandbox.execStream(Command.of("sh", "-c",
                    "for step in fetch compile test package; do echo \"   [build] $step\"; sleep 0.2; done; echo '   [build] warning: 1 deprecation' >&2")
                    .workdir("/workspace"))) {
                for (ExecEvent event : build) {
                    if (event instanceof ExecEvent.Stdout o) {
                        out.print(o.stdoutText());
                    } else if (event instanceof ExecEvent.Stderr e) {
                        out.print(e.stderrText());
                    } else if (event instanceof ExecEvent.Exited x) {
                        out.println("   build finished: exit code " + x.exitCode().orElse(-1));
                    }
                }
            }

            out.println("4. an interactive shell through stdin:");
            try (ExecProcess shell = sandbox.execStart("sh")) {
                shell.writeStdin("cd /workspace && echo 'notes' > todo.txt\n");
                shell.writeStdin("echo \"   files: $(ls)\"; echo \"   processes: $(ls /proc | grep -c '^[0-9]')\"\n");
                shell.writeStdin("exit 0\n");
                shell.closeStdin();
                ExecResult result = shell.waitFor();
                out.print(result.stdoutText());
                out.println("   shell exited with " + result.exitCode());
            }

            out.println("5. stopping a process with a signal:");
            try (ExecProcess sleeper = sandbox.execStart("sleep", "300")) {
                out.println("   started sleep 300 as pid " + sleeper.pid() + " inside the sandbox");
                sleeper.sendSignal(Signal.TERM);
                ExecResult stopped = sleeper.waitFor(Duration.ofSeconds(10));
                out.println("   stopped by signal " + stopped.signal().orElse(-1) + " (exit code " + stopped.exitCode() + ")");
            }
        } finally {
            sandbox.terminate();
            out.println("6. terminated: " + sandbox.refresh().state());
        }
    }
}
