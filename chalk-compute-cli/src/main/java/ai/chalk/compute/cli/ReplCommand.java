package ai.chalk.compute.cli;

import ai.chalk.compute.code.CodeSandbox;
import ai.chalk.compute.code.ExecutionResult;
import ai.chalk.compute.code.Language;
import ai.chalk.compute.code.Result;
import ai.chalk.compute.code.RunOptions;
import ai.chalk.compute.code.SandboxConfig;
import ai.chalk.compute.code.Variant;
import ai.chalk.compute.sandbox.SandboxClient;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.jline.reader.EndOfFileException;
import org.jline.reader.LineReader;
import org.jline.reader.LineReaderBuilder;
import org.jline.reader.UserInterruptException;
import org.jline.terminal.Terminal;
import org.jline.terminal.TerminalBuilder;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code chalk-compute repl}: snippets typed at a prompt run in one {@link CodeSandbox}, with the state kept from one
 * to the next. Ctrl-C interrupts the running snippet (a {@code KeyboardInterrupt}; the state stays) and never leaves
 * the REPL; Ctrl-D or {@code exit()} leaves it, and what the REPL created is terminated however it ends.
 */
@Command(
        name = "repl",
        description = {
            "Run code snippets in a sandbox, the state kept from one to the next.",
            "Enter on an unfinished snippet (an open bracket, a block) continues it; a blank line ends a block.",
            "Ctrl-C interrupts the running snippet, Ctrl-D or exit() leaves and terminates the sandbox."
        })
final class ReplCommand implements Callable<Integer> {

    /** Variants a person can pick here; the hosted ones are named in the error their creation gives. */
    private static final String OFFERED = "chalk, jupyter, docker, eval";

    private static final Set<String> LEAVE = Set.of("exit", "exit()", "quit", "quit()", "/exit");

    @ParentCommand
    @Nullable
    ChalkComputeCli cli;

    @Spec
    CommandLine.Model.@Nullable CommandSpec spec;

    @Option(
            names = "--variant",
            paramLabel = "VARIANT",
            description = "Where snippets run: chalk (a sandbox on the server), jupyter (a kernel on --jupyter-url),"
                    + " docker, eval. Asked for when omitted.")
    @Nullable
    String variant;

    @Option(
            names = "--language",
            defaultValue = "python",
            description = "python, or java (JShell in a chalk sandbox). Default: ${DEFAULT-VALUE}.")
    Language language = Language.PYTHON;

    @Option(names = "--image", description = "The sandbox's image (chalk variant); the server's default otherwise.")
    @Nullable
    String image;

    @Option(
            names = "--timeout",
            converter = DurationConverter.class,
            description = "Stop a snippet after this long (30s, 5m); none by default.")
    @Nullable
    Duration timeout;

    @Option(names = "--env", paramLabel = "NAME=VALUE", description = "An environment variable of the sandbox.")
    Map<String, String> env = new LinkedHashMap<>();

    @Option(names = "--jupyter-url", description = "The Jupyter server of the jupyter variant.")
    @Nullable
    URI jupyterUrl;

    @Option(
            names = "--jupyter-token",
            defaultValue = "${env:JUPYTER_TOKEN}",
            description = "Its token (default: JUPYTER_TOKEN).")
    @Nullable
    String jupyterToken;

    @Option(
            names = "--history-file",
            description = "Where typed snippets are kept (default: CHALK_COMPUTE_HISTORY, else"
                    + " ~/.chalk-compute/history).")
    @Nullable
    Path historyFile;

    @Override
    public Integer call() throws IOException {
        Variant given = variant == null ? null : variant(variant);
        // signals reach the handlers below, never the JVM's defaults: Ctrl-C must not end the process
        try (Terminal terminal = TerminalBuilder.builder()
                .name("chalk-compute")
                .system(true)
                .nativeSignals(true)
                .signalHandler(Terminal.SignalHandler.SIG_IGN)
                .build()) {
            Variant chosen = given != null ? given : askVariant(terminal);
            if (chosen == null) {
                return ChalkComputeCli.FAILED;
            }
            PrintWriter out = terminal.writer();
            out.println("Starting " + chosen.label() + " (" + language.name().toLowerCase(Locale.ROOT) + ")...");
            out.flush();
            try (Opened opened = open(chosen, terminal)) {
                Thread cleanup = new Thread(opened::close, "chalk-compute-repl-cleanup");
                // a killed terminal (SIGHUP) or SIGTERM still terminates the sandbox
                Runtime.getRuntime().addShutdownHook(cleanup);
                try {
                    out.println("Ready: " + opened.description + ". Ctrl-C interrupts a running snippet; Ctrl-D or "
                            + (language == Language.PYTHON ? "exit()" : "/exit") + " leaves and terminates it.");
                    out.flush();
                    loop(terminal, opened.sandbox);
                } finally {
                    opened.close();
                    out.println("Closed " + opened.description + ".");
                    out.flush();
                    try {
                        Runtime.getRuntime().removeShutdownHook(cleanup);
                    } catch (IllegalStateException shuttingDown) {
                        // the hook runs anyway, and close() is idempotent
                    }
                }
            }
        }
        return 0;
    }

    private Variant variant(String name) {
        try {
            return Variant.of(name);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(
                    spec().commandLine(), "unknown variant '" + name + "': choose one of " + OFFERED);
        }
    }

    private @Nullable Variant askVariant(Terminal terminal) {
        LineReader ask = LineReaderBuilder.builder().terminal(terminal).build();
        while (true) {
            String answer;
            try {
                answer = ask.readLine("Variant (" + OFFERED + ") [chalk]: ").strip();
            } catch (UserInterruptException | EndOfFileException e) {
                return null;
            }
            if (answer.isEmpty()) {
                return Variant.CHALK;
            }
            try {
                Variant chosen = Variant.of(answer);
                if (chosen == Variant.JUPYTER && jupyterUrl == null) {
                    jupyterUrl = URI.create(ask.readLine("Jupyter server URL: ").strip());
                    if (jupyterToken == null || jupyterToken.isEmpty()) {
                        jupyterToken = ask.readLine("Token: ", '*').strip();
                    }
                }
                return chosen;
            } catch (IllegalArgumentException e) {
                terminal.writer().println("Not a variant: " + answer + ". Choose one of " + OFFERED + ".");
            } catch (UserInterruptException | EndOfFileException e) {
                return null;
            }
        }
    }

    private SandboxConfig config() {
        SandboxConfig.Builder config =
                SandboxConfig.builder().language(language).env(env);
        if (image != null) {
            config.environment(image);
        }
        if (timeout != null) {
            config.timeout(timeout);
        }
        return config.build();
    }

    private Opened open(Variant chosen, Terminal terminal) {
        SandboxConfig config = config();
        switch (chosen) {
            case CHALK -> {
                SandboxClient client = cli().connect();
                try {
                    CodeSandbox sandbox = CodeSandbox.create(client, config);
                    return new Opened(sandbox, client, "chalk sandbox " + sandbox.id());
                } catch (RuntimeException e) {
                    client.close();
                    throw e;
                }
            }
            case JUPYTER -> {
                if (jupyterUrl == null) {
                    throw new CommandLine.ParameterException(
                            spec().commandLine(), "the jupyter variant needs --jupyter-url (and a token)");
                }
                CodeSandbox kernel =
                        CodeSandbox.connectJupyter(jupyterUrl, jupyterToken == null ? "" : jupyterToken, config);
                return new Opened(kernel, null, "jupyter kernel on " + jupyterUrl);
            }
            default -> {
                CodeSandbox sandbox = CodeSandbox.create(chosen, config);
                return new Opened(sandbox, null, chosen.label() + " sandbox");
            }
        }
    }

    private void loop(Terminal terminal, CodeSandbox sandbox) throws IOException {
        Path history = historyFile();
        Path dir = history.toAbsolutePath().getParent();
        if (!Files.isDirectory(dir)) {
            Files.createDirectories(
                    dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        }
        // every snippet typed is kept there, keys pasted into one too: only its owner reads it
        if (!Files.exists(history, LinkOption.NOFOLLOW_LINKS)) {
            Files.createFile(
                    history, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        }
        LineReader reader = LineReaderBuilder.builder()
                .terminal(terminal)
                .appName("chalk-compute")
                .parser(new SnippetInput(language))
                .variable(LineReader.HISTORY_FILE, history)
                .variable(LineReader.SECONDARY_PROMPT_PATTERN, "... ")
                // '!' is code here, not a history reference; Tab indents
                .option(LineReader.Option.DISABLE_EVENT_EXPANSION, true)
                .option(LineReader.Option.INSERT_TAB, true)
                .build();
        String prompt = language == Language.PYTHON ? ">>> " : "jshell> ";
        ExecutorService runner = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "chalk-compute-repl-snippet");
            t.setDaemon(true);
            return t;
        });
        try {
            while (true) {
                String code;
                try {
                    code = reader.readLine(prompt);
                } catch (UserInterruptException e) {
                    continue; // Ctrl-C at the prompt drops what was typed, as Python's REPL does
                } catch (EndOfFileException e) {
                    return;
                }
                if (code.isBlank()) {
                    continue;
                }
                if (LEAVE.contains(code.strip())) {
                    return;
                }
                try {
                    show(terminal.writer(), run(terminal, runner, sandbox, code));
                } catch (RuntimeException e) {
                    // a snippet the SDK could not run (a lost connection, a dead interpreter) ends that snippet only
                    terminal.writer().println("error: " + ChalkComputeCli.describe(e));
                    terminal.writer().flush();
                }
            }
        } finally {
            runner.shutdownNow();
            reader.getHistory().save();
        }
    }

    private Path historyFile() {
        if (historyFile != null) {
            return historyFile;
        }
        String fromEnv = System.getenv("CHALK_COMPUTE_HISTORY");
        if (fromEnv != null && !fromEnv.isBlank()) {
            return Path.of(fromEnv);
        }
        return Path.of(System.getProperty("user.home"), ".chalk-compute", "history");
    }

    /** Runs one snippet, its output shown as it comes; Ctrl-C meanwhile interrupts it. */
    private static ExecutionResult run(Terminal terminal, ExecutorService runner, CodeSandbox sandbox, String code) {
        PrintWriter out = terminal.writer();
        Object lock = new Object();
        RunOptions options = RunOptions.defaults()
                .onStdout(m -> print(out, lock, m.line()))
                .onStderr(m -> print(out, lock, m.line()));
        Terminal.SignalHandler previous = terminal.handle(Terminal.Signal.INT, s -> sandbox.interrupt());
        try {
            Future<ExecutionResult> result = runner.submit(() -> sandbox.runCode(code, options));
            while (true) {
                try {
                    return result.get();
                } catch (InterruptedException e) {
                    // the REPL's thread is only interrupted by the signal machinery: interrupt the snippet, wait on
                    sandbox.interrupt();
                } catch (ExecutionException e) {
                    Throwable cause = e.getCause() == null ? e : e.getCause();
                    if (cause instanceof RuntimeException r) {
                        throw r;
                    }
                    throw new IllegalStateException(cause);
                }
            }
        } finally {
            terminal.handle(Terminal.Signal.INT, previous);
            out.flush();
        }
    }

    private static void print(PrintWriter out, Object lock, String line) {
        synchronized (lock) {
            out.println(line);
            out.flush();
        }
    }

    /** The result as Python's REPL shows it: displays, then the error or the last expression's value. */
    static void show(PrintWriter out, ExecutionResult result) {
        for (Result r : result.results()) {
            if (!r.isMainResult()) {
                out.println(describe(r));
            }
        }
        if (!result.executionOk()) {
            out.println("error: " + result.executionError().orElse("the snippet did not run"));
        } else if (result.exitCode().isPresent()) {
            out.println("The interpreter exited with code " + result.exitCode().getAsInt()
                    + "; the next snippet starts with a fresh state.");
        } else if (result.codeError().isPresent()) {
            var error = result.codeError().get();
            // a driver that printed the traceback on stderr has shown it already
            if (!result.stderr().contains(error.toString())) {
                out.println(
                        error.traceback().isBlank()
                                ? error.toString()
                                : error.traceback().stripTrailing());
            }
        } else if (!result.text().isEmpty()) {
            out.println(result.text());
        }
        for (var skipped : result.skippedArtifacts()) {
            out.println("(not sent: " + skipped + ")");
        }
        out.flush();
    }

    private static String describe(Result r) {
        if (r.png().isPresent()) {
            return "[image/png, " + r.png().get().length + " bytes]";
        }
        return r.text().orElse("[" + String.join(", ", r.formats()) + "]");
    }

    private ChalkComputeCli cli() {
        if (cli == null) {
            throw new IllegalStateException("repl runs under chalk-compute");
        }
        return cli;
    }

    private CommandLine.Model.CommandSpec spec() {
        if (spec == null) {
            throw new IllegalStateException("repl runs under picocli");
        }
        return spec;
    }

    /** What the REPL created, closed once whichever way it ends (the loop, an error, a shutdown hook). */
    private static final class Opened implements AutoCloseable {
        final CodeSandbox sandbox;
        final @Nullable SandboxClient client;
        final String description;
        private boolean closed;

        Opened(CodeSandbox sandbox, @Nullable SandboxClient client, String description) {
            this.sandbox = sandbox;
            this.client = client;
            this.description = description;
        }

        /**
         * Synchronized: the shutdown hook of a closed terminal waits here for the REPL thread's close to finish, or
         * the JVM would halt halfway through terminating the sandbox.
         */
        @Override
        public synchronized void close() {
            if (closed) {
                return;
            }
            closed = true;
            try {
                sandbox.close();
            } finally {
                if (client != null) {
                    client.close();
                }
            }
        }
    }
}
