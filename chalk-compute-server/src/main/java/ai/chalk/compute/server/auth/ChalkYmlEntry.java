package ai.chalk.compute.server.auth;

/**
 * A credential written in the format of the Chalk CLI's {@code ~/.chalk.yml} ({@code chalk login}), which the SDKs
 * read: the file can be copied there as it is, or its values exported as {@code CHALK_CLIENT_ID} and
 * {@code CHALK_CLIENT_SECRET}.
 */
final class ChalkYmlEntry {

    private ChalkYmlEntry() {}

    /** The file's text; {@code apiServer} is where tokens are exchanged (this server's gRPC URL), blank if unknown. */
    static String render(ClientCredentials.Created created, String apiServer) {
        ClientCredentials.Credential c = created.credential();
        StringBuilder yml = new StringBuilder()
                .append("# Client credential ")
                .append(c.id())
                .append(" of a Chalk Compute server: ")
                .append("copy to ~/.chalk.yml, or export CHALK_CLIENT_ID and CHALK_CLIENT_SECRET.\n")
                .append("tokens:\n")
                .append("  default:\n")
                .append("    name: ")
                .append(quoted(c.name()))
                .append('\n')
                .append("    clientId: ")
                .append(quoted(c.id()))
                .append('\n')
                .append("    clientSecret: ")
                .append(quoted(created.secret()))
                .append('\n');
        if (!apiServer.isBlank()) {
            yml.append("    apiServer: ").append(quoted(apiServer)).append('\n');
        }
        return yml.append("    activeEnvironment: ")
                .append(quoted(c.environment()))
                .append('\n')
                .toString();
    }

    /** A YAML double-quoted scalar; ids, names and secrets are printable, but a name may hold a colon. */
    private static String quoted(String s) {
        return '"' + s.replace("\\", "\\\\").replace("\"", "\\\"") + '"';
    }
}
