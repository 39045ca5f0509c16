package ai.chalk.compute.cli;

import ai.chalk.compute.sandbox.Command;
import ai.chalk.compute.sandbox.ExecEvent;
import ai.chalk.compute.sandbox.ExecStream;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.sandbox.SandboxDefinition;
import ai.chalk.compute.sandbox.SandboxInfo;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code chalk-compute sandbox ...}: create, list, run commands in, attach a shell to and terminate sandboxes. */
@CommandLine.Command(
        name = "sandbox",
        description = "Create, list, run commands in, open a shell in and terminate sandboxes.",
        subcommands = {
            SandboxCommands.Create.class,
            SandboxCommands.ListSandboxes.class,
            SandboxCommands.Exec.class,
            SandboxCommands.Shell.class,
            SandboxCommands.Terminate.class
        })
final class SandboxCommands extends CommandGroup {

    private static final DateTimeFormatter TIME =
            DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss'Z'").withZone(ZoneOffset.UTC);

    SandboxCommands() {
        super("create, list, exec, shell or terminate");
    }

    @CommandLine.Command(name = "create", description = "Create a sandbox and print its id; it runs until terminated.")
    static final class Create implements Callable<Integer> {
        @Mixin
        CommandContext context;

        @Option(names = "--image", description = "Its image; the server's default otherwise.")
        @Nullable
        String image;

        @Option(names = "--name", description = "A name to find it by.")
        @Nullable
        String name;

        @Option(names = "--cpu", description = "CPU request, such as 500m or 2.")
        @Nullable
        String cpu;

        @Option(names = "--memory", description = "Memory request, such as 512Mi or 2Gi.")
        @Nullable
        String memory;

        @Option(names = "--workdir", description = "The working directory of its commands.")
        @Nullable
        String workdir;

        @Option(names = "--env", paramLabel = "NAME=VALUE", description = "An environment variable.")
        Map<String, String> env = new LinkedHashMap<>();

        @Option(names = "--tag", paramLabel = "KEY=VALUE", description = "A tag.")
        Map<String, String> tags = new LinkedHashMap<>();

        @Option(
                names = "--lifetime",
                converter = DurationConverter.class,
                description = "Terminate it after this long (30m, 2h).")
        @Nullable
        Duration lifetime;

        @Override
        public Integer call() {
            SandboxDefinition.Builder definition = Sandbox.builder();
            if (image != null) {
                definition.image(image);
            }
            if (name != null) {
                definition.name(name);
            }
            if (cpu != null) {
                definition.cpu(cpu);
            }
            if (memory != null) {
                definition.memory(memory);
            }
            if (workdir != null) {
                definition.workdir(workdir);
            }
            if (!env.isEmpty()) {
                definition.env(env);
            }
            if (!tags.isEmpty()) {
                definition.tags(tags);
            }
            if (lifetime != null) {
                definition.lifetime(lifetime);
            }
            try (SandboxClient client = context.connect()) {
                Sandbox sandbox = client.create(definition);
                context.out().println(sandbox.id());
            }
            return 0;
        }
    }

    @CommandLine.Command(name = "list", description = "List the running sandboxes of the environment.")
    static final class ListSandboxes implements Callable<Integer> {
        @Mixin
        CommandContext context;

        @Option(names = "--quiet", description = "Print the ids only.")
        boolean quiet;

        @Override
        public Integer call() {
            PrintWriter out = context.out();
            try (SandboxClient client = context.connect()) {
                List<SandboxInfo> sandboxes = client.list();
                if (quiet) {
                    sandboxes.forEach(s -> out.println(s.id()));
                    return 0;
                }
                List<String[]> rows = new ArrayList<>();
                rows.add(new String[] {"ID", "NAME", "STATE", "CREATED"});
                for (SandboxInfo s : sandboxes) {
                    rows.add(new String[] {s.id(), s.name().orElse("-"), s.state(), time(s.createdAt())});
                }
                Table.print(out, rows);
            }
            return 0;
        }
    }

    @CommandLine.Command(
            name = "exec",
            description = "Run a command in a sandbox, its output streamed; exits with the command's status.")
    static final class Exec implements Callable<Integer> {
        @Mixin
        CommandContext context;

        @Parameters(index = "0", paramLabel = "SANDBOX_ID", description = "The sandbox.")
        String id = "";

        @Parameters(
                index = "1..*",
                arity = "1..*",
                paramLabel = "COMMAND",
                description = "The program and its arguments (put -- before them when they start with -).")
        List<String> command = new ArrayList<>();

        @Option(names = "--workdir", description = "The directory it runs in.")
        @Nullable
        String workdir;

        @Option(names = "--env", paramLabel = "NAME=VALUE", description = "An environment variable.")
        Map<String, String> env = new LinkedHashMap<>();

        @Option(names = "--timeout", converter = DurationConverter.class, description = "Kill it after this long.")
        @Nullable
        Duration timeout;

        @Override
        public Integer call() throws Exception {
            Command cmd = Command.of(command.get(0), command.subList(1, command.size()));
            if (workdir != null) {
                cmd = cmd.workdir(workdir);
            }
            if (!env.isEmpty()) {
                cmd = cmd.env(env);
            }
            if (timeout != null) {
                cmd = cmd.timeout(timeout);
            }
            PrintWriter out = context.out();
            PrintWriter err = context.err();
            try (SandboxClient client = context.connect();
                    ExecStream events = client.get(id).execStream(cmd)) {
                for (ExecEvent event : events) {
                    if (event.stdoutText() != null) {
                        out.print(event.stdoutText());
                        out.flush();
                    } else if (event.stderrText() != null) {
                        err.print(event.stderrText());
                        err.flush();
                    } else if (event.isExited()) {
                        if (event.signal().isPresent()) {
                            err.println("killed by signal " + event.signal().getAsInt());
                            return 128 + event.signal().getAsInt();
                        }
                        return event.exitCode().orElse(ChalkComputeCli.FAILED);
                    }
                }
            }
            return ChalkComputeCli.FAILED;
        }
    }

    @CommandLine.Command(
            name = "shell",
            description = {
                "Open an interactive shell in a sandbox, on a terminal of its own (raw mode; resizes follow this one).",
                "Leave it with exit or Ctrl-D; Ctrl-C goes to the sandbox."
            })
    static final class Shell implements Callable<Integer> {
        @Mixin
        CommandContext context;

        @Parameters(index = "0", paramLabel = "SANDBOX_ID", description = "The sandbox.")
        String id = "";

        @Option(
                names = "--command",
                description = "The program to run instead of the sandbox's shell (bash when it has one, else sh).")
        @Nullable
        String program;

        @Option(names = "--workdir", description = "The directory it starts in.")
        @Nullable
        String workdir;

        @Override
        public Integer call() throws Exception {
            try (SandboxClient client = context.connect()) {
                Sandbox sandbox = client.get(id);
                return new PtyShell(sandbox, program, workdir).attach();
            }
        }
    }

    @CommandLine.Command(name = "terminate", description = "Terminate sandboxes.")
    static final class Terminate implements Callable<Integer> {
        @Mixin
        CommandContext context;

        @Parameters(arity = "1..*", paramLabel = "SANDBOX_ID", description = "The sandboxes.")
        List<String> ids = new ArrayList<>();

        @Option(names = "--now", description = "Kill its processes at once, without the grace period.")
        boolean now;

        @Override
        public Integer call() {
            PrintWriter out = context.out();
            try (SandboxClient client = context.connect()) {
                for (String id : ids) {
                    Sandbox sandbox = client.get(id);
                    if (now) {
                        sandbox.terminate(Duration.ZERO);
                    } else {
                        sandbox.terminate();
                    }
                    out.println("terminated " + id);
                }
            }
            return 0;
        }
    }

    /** When a listing shows a time that is unknown. */
    static String time(@Nullable Instant at) {
        return at == null ? "-" : TIME.format(at);
    }
}
