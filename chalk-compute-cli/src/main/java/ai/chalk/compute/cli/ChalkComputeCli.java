package ai.chalk.compute.cli;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.sandbox.SandboxClient;
import java.io.PrintWriter;
import java.util.function.Supplier;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code chalk-compute}: the command line of Chalk Compute. It connects as the SDK does
 * ({@link SandboxClient#fromEnv(java.util.Map)} on this process's environment:
 * {@code CHALK_COMPUTE_TARGET}, else {@code CHALK_API_SERVER}, else a {@code chalk login}; credentials from
 * {@code CHALK_CLIENT_ID}/{@code CHALK_CLIENT_SECRET}, a token file or that login).
 *
 * <pre>
 * chalk-compute repl --variant chalk
 * chalk-compute sandbox create --image python:3.12
 * chalk-compute sandbox shell SANDBOX_ID
 * chalk-compute function call greet '"Ada"'
 * </pre>
 */
@Command(
        name = "chalk-compute",
        // --help and --version on every subcommand too
        scope = CommandLine.ScopeType.INHERIT,
        mixinStandardHelpOptions = true,
        versionProvider = ChalkComputeCli.Version.class,
        description = "Chalk Compute from the command line: run code, sandboxes, functions and image builds.",
        footer = {
            "",
            "Connects as the SDK does: CHALK_COMPUTE_TARGET (host:port or URL), else CHALK_API_SERVER, else the API"
                    + " server of a chalk login (~/.chalk.yml). Credentials: CHALK_CLIENT_ID and CHALK_CLIENT_SECRET,"
                    + " CHALK_WEB_IDENTITY_TOKEN_FILE, or that login."
        },
        subcommands = {
            ReplCommand.class,
            SandboxCommands.class,
            FunctionCommands.class,
            ImageCommands.class,
            CommandLine.HelpCommand.class
        })
public final class ChalkComputeCli implements Runnable {

    /** Exit status of a command the server or the SDK refused (picocli uses 2 for a mistyped command line). */
    static final int FAILED = 1;

    private final Supplier<SandboxClient> clients;

    @Spec
    CommandSpec spec;

    /**
     * The command line connecting with {@link SandboxClient#fromEnv(java.util.Map)} on this process's environment: the
     * resolution that also reads a {@code chalk login} and exchanges client credentials for tokens.
     */
    public ChalkComputeCli() {
        this(() -> SandboxClient.fromEnv(System.getenv()));
    }

    /** The command line connecting with {@code clients} (a test's in-process server, say). */
    ChalkComputeCli(Supplier<SandboxClient> clients) {
        this.clients = clients;
    }

    /** Runs the command line and exits with its status. */
    public static void main(String[] args) {
        // without a terminal (a pipe, CI) JLine falls back to a dumb one, which is fine here: no warning about it
        java.util.logging.Logger.getLogger("org.jline").setLevel(java.util.logging.Level.SEVERE);
        int status = commandLine(new ChalkComputeCli()).execute(args);
        System.exit(status);
    }

    /** A picocli command line for {@code cli}, with the errors shown as one line each, not as stack traces. */
    static CommandLine commandLine(ChalkComputeCli cli) {
        CommandLine line = new CommandLine(cli);
        line.setExecutionExceptionHandler(ChalkComputeCli::showError);
        line.setCaseInsensitiveEnumValuesAllowed(true);
        return line;
    }

    @Override
    public void run() {
        // no subcommand: what there is to do
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    /** A new client for one command; the caller closes it. */
    SandboxClient connect() {
        return clients.get();
    }

    private static int showError(Exception e, CommandLine line, CommandLine.ParseResult parsed) {
        PrintWriter err = line.getErr();
        err.println(line.getColorScheme().errorText("error: " + describe(e)));
        err.flush();
        return FAILED;
    }

    /** What went wrong, in one line a person can act on; secrets never appear in the SDK's messages. */
    static String describe(Throwable e) {
        if (e instanceof ChalkComputeException c) {
            String message = c.getMessage();
            return message == null ? c.statusCode().name() : message;
        }
        if (e instanceof IllegalArgumentException || e instanceof IllegalStateException) {
            return String.valueOf(e.getMessage());
        }
        if (e instanceof UnsupportedOperationException) {
            return String.valueOf(e.getMessage());
        }
        String message = e.getMessage();
        return message == null ? e.getClass().getSimpleName() : e.getClass().getSimpleName() + ": " + message;
    }

    /** The version from the jar's manifest (the shaded jar carries the module's). */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String version = ChalkComputeCli.class.getPackage().getImplementationVersion();
            return new String[] {"chalk-compute " + (version == null ? "(development build)" : version)};
        }
    }
}
