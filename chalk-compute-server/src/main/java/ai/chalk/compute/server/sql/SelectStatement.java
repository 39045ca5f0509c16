package ai.chalk.compute.server.sql;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * A user's SQL checked to be exactly one query, by DuckDB's own parser ({@code json_serialize_sql}, which serialises
 * SELECT statements only). Only the checked form, the query as a parenthesised subquery, is ever run, so nothing a
 * user writes runs as a statement of its own: no SET, PRAGMA, ATTACH, COPY, INSTALL, LOAD, CREATE or EXPORT reaches
 * DuckDB, whose locked configuration refuses them again underneath.
 */
final class SelectStatement {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern TRAILING = Pattern.compile("[\\s;]+$");
    private static final Pattern LEADING_COMMENTS =
            Pattern.compile("^(\\s+|--[^\\n]*\\n?|/\\*.*?\\*/)+", Pattern.DOTALL);

    private final String subquery;

    private SelectStatement(String subquery) {
        this.subquery = subquery;
    }

    /**
     * Checks {@code sql} on {@code connection} (a locked query database).
     *
     * @throws SqlFailure INVALID naming what is wrong: DuckDB's syntax error, more than one statement, or a statement
     *                    that is not a query
     */
    static SelectStatement check(Connection connection, String sql) {
        String query = TRAILING.matcher(sql).replaceAll("");
        if (query.isBlank()) {
            throw new SqlFailure(SqlFailure.Reason.INVALID, "the query is empty: write one SELECT statement");
        }
        JsonNode alone = serialize(connection, query);
        if (alone.path("error").asBoolean()) {
            throw refusal(alone, query);
        }
        int statements = alone.path("statements").size();
        if (statements != 1) {
            throw new SqlFailure(
                    SqlFailure.Reason.INVALID,
                    "one statement per query, found " + statements + ": send them one at a time");
        }
        String wrapped = "SELECT * FROM (\n" + query + "\n)";
        JsonNode inside = serialize(connection, wrapped);
        // a query that is one statement alone but not inside parentheses (it closes them itself) is refused, never run
        if (inside.path("error").asBoolean() || inside.path("statements").size() != 1) {
            throw new SqlFailure(
                    SqlFailure.Reason.INVALID,
                    "the query cannot be run as a subquery (unbalanced parentheses or comments?): " + query);
        }
        return new SelectStatement(wrapped);
    }

    /** The query as one parenthesised subquery: {@code SELECT * FROM (<query>)}. */
    String subquery() {
        return subquery;
    }

    private static JsonNode serialize(Connection connection, String sql) {
        try (PreparedStatement ps = connection.prepareStatement("SELECT json_serialize_sql(?::VARCHAR)")) {
            ps.setString(1, sql);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return JSON.readTree(rs.getString(1));
            }
        } catch (SQLException | java.io.IOException e) {
            throw new SqlFailure(SqlFailure.Reason.FAILED, "checking the query failed: " + e.getMessage(), e);
        }
    }

    private static SqlFailure refusal(JsonNode error, String query) {
        String type = error.path("error_type").asText();
        String message = error.path("error_message").asText();
        if (type.equals("parser")) {
            String position = error.path("position").asText("");
            return new SqlFailure(
                    SqlFailure.Reason.INVALID,
                    "Parser Error: " + message
                            + (position.isEmpty() ? "" : " (at character " + (Integer.parseInt(position) + 1) + ")"));
        }
        String body = LEADING_COMMENTS.matcher(query).replaceFirst("");
        String keyword = body.split("\\s+", 2)[0].toUpperCase(Locale.ROOT);
        return new SqlFailure(
                SqlFailure.Reason.INVALID,
                "only queries run here (one SELECT, WITH, FROM or VALUES statement over chalk.datasets.<name>); a "
                        + keyword + " statement cannot: SQL reads your environment's datasets and nothing else");
    }
}
