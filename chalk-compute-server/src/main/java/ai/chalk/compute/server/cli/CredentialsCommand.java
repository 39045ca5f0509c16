package ai.chalk.compute.server.cli;

import ai.chalk.compute.server.auth.ClientCredentials;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code chalk-compute-server credentials create|list|revoke}: the client credentials of a server, managed in its
 * data directory, whether the server runs or not (a running server sees a change at once).
 */
@Command(
        name = "credentials",
        mixinStandardHelpOptions = true,
        description = "Creates, lists and revokes the client credentials that get tokens from this server.",
        subcommands = {
            CredentialsCommand.Create.class,
            CredentialsCommand.ListAll.class,
            CredentialsCommand.Revoke.class
        })
final class CredentialsCommand {

    @Option(
            names = "--data-dir",
            scope = CommandLine.ScopeType.INHERIT,
            description = "The server's data directory. Default: ~/.chalk-compute.")
    Path dataDir = Path.of(System.getProperty("user.home"), ".chalk-compute");

    @Spec
    CommandLine.Model.CommandSpec spec;

    ClientCredentials open() throws java.io.IOException {
        return new ClientCredentials(dataDir.toAbsolutePath().normalize().resolve("auth"), Clock.systemUTC());
    }

    /** {@code credentials create --environment dev --name ci}: prints the id and secret, once. */
    @Command(
            name = "create",
            mixinStandardHelpOptions = true,
            description = "Makes a credential and prints its id and secret (the secret is shown only now).")
    static final class Create implements Callable<Integer> {
        @CommandLine.ParentCommand
        CredentialsCommand parent;

        @Option(names = "--environment", description = "The environment it acts in. Default: ${DEFAULT-VALUE}.")
        String environment = "default";

        @Option(names = "--name", description = "What it is for, e.g. ci. Default: ${DEFAULT-VALUE}.")
        String name = "client";

        @Override
        public Integer call() throws Exception {
            ClientCredentials.Created created;
            try {
                created = parent.open().create(name, environment);
            } catch (IllegalArgumentException e) {
                throw new CommandLine.ParameterException(parent.spec.commandLine(), e.getMessage());
            }
            PrintWriter out = parent.spec.commandLine().getOut();
            out.println("CHALK_CLIENT_ID=" + created.credential().id());
            out.println("CHALK_CLIENT_SECRET=" + created.secret());
            out.println("CHALK_ENVIRONMENT=" + created.credential().environment());
            out.println("# the secret is not shown again; revoke with: credentials revoke "
                    + created.credential().id());
            out.flush();
            return 0;
        }
    }

    /** {@code credentials list}: every credential, without secrets. */
    @Command(name = "list", mixinStandardHelpOptions = true, description = "Lists the credentials (never secrets).")
    static final class ListAll implements Callable<Integer> {
        @CommandLine.ParentCommand
        CredentialsCommand parent;

        @Override
        public Integer call() throws Exception {
            List<ClientCredentials.Credential> all = parent.open().list();
            PrintWriter out = parent.spec.commandLine().getOut();
            out.printf("%-24s %-16s %-20s %-28s %s%n", "ID", "ENVIRONMENT", "NAME", "CREATED", "STATE");
            for (ClientCredentials.Credential c : all) {
                out.printf(
                        "%-24s %-16s %-20s %-28s %s%n",
                        c.id(),
                        c.environment(),
                        c.name(),
                        c.createdAt(),
                        c.revokedAt().map(t -> "revoked " + t).orElse("active"));
            }
            out.flush();
            return 0;
        }
    }

    /** {@code credentials revoke ID}: no more tokens, and tokens it got stop working. */
    @Command(
            name = "revoke",
            mixinStandardHelpOptions = true,
            description = "Revokes a credential: it gets no more tokens, and the tokens it got stop working.")
    static final class Revoke implements Callable<Integer> {
        @CommandLine.ParentCommand
        CredentialsCommand parent;

        @Parameters(paramLabel = "ID", description = "The credential's id (see list).")
        String id;

        @Override
        public Integer call() throws Exception {
            boolean revoked = parent.open().revoke(id);
            PrintWriter out = parent.spec.commandLine().getOut();
            if (!revoked) {
                parent.spec.commandLine().getErr().println("no active credential " + id + " (see credentials list)");
                return 1;
            }
            out.println("revoked " + id);
            out.flush();
            return 0;
        }
    }
}
