package ai.chalk.compute.server.store;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** Running the stores' statements against their database (one at a time), and the pieces of SQL they build. */
final class SqlQuery {

    /** Reads one record from the current row. */
    interface Row<T> {
        T read(ResultSet rs) throws SQLException;
    }

    /** Sets a statement's parameters. */
    interface Parameters {
        void set(PreparedStatement ps) throws SQLException;
    }

    private SqlQuery() {}

    /** The records {@code sql} selects with {@code args}; a failure is "reading {@code what} failed". */
    static <T> List<T> select(Database db, String sql, List<?> args, Row<T> row, String what) {
        return db.read("reading " + what, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                for (int i = 0; i < args.size(); i++) {
                    ps.setObject(i + 1, args.get(i));
                }
                List<T> out = new ArrayList<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(row.read(rs));
                    }
                }
                return out;
            }
        });
    }

    /** Executes the update {@code sql}; a failure is "{@code failure} failed". */
    static void update(Database db, String sql, Parameters parameters, String failure) {
        updateCount(db, sql, parameters, failure);
    }

    /** As {@link #update}, returning how many rows changed. */
    static int updateCount(Database db, String sql, Parameters parameters, String failure) {
        return db.write(failure, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                parameters.set(ps);
                return ps.executeUpdate();
            }
        });
    }

    /** {@code n} comma-separated parameter markers, for {@code IN (...)}. */
    static String placeholders(int n) {
        return String.join(",", Collections.nCopies(n, "?"));
    }

    /** {@code s} with LIKE's wildcards escaped, to match literally. */
    static String likeEscape(String s) {
        return s.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_");
    }

    /** Status messages are sentences; a runaway one (a tool's whole usage text) is cut, saying so. */
    static String fit(String message) {
        int max = 4096;
        if (message == null || message.length() <= max) {
            return message;
        }
        String marker = "... (cut, " + message.length() + " characters in all)";
        return message.substring(0, max - marker.length()) + marker;
    }
}
