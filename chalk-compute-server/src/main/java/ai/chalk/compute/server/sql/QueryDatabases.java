package ai.chalk.compute.server.sql;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/**
 * The locked {@link QueryDatabase} of each environment (and memory limit), kept while the environment's datasets stay
 * as they are, so a query finds DuckDB started, its views bound and its caches warm. A database is replaced when the
 * tables change, and closed once the queries using it end; at most {@link #MAX_OPEN} idle ones are kept.
 */
final class QueryDatabases implements AutoCloseable {

    static final int MAX_OPEN = 16;

    private record Key(String environment, long memoryBytes) {}

    private static final class Entry {
        final List<DatasetTable> tables;
        final QueryDatabase db;
        final Path dir;
        int users;
        boolean retired;

        Entry(List<DatasetTable> tables, QueryDatabase db, Path dir) {
            this.tables = tables;
            this.db = db;
            this.dir = dir;
        }
    }

    /** A database lent to one query; closing gives it back. */
    final class Lease implements AutoCloseable {
        private final Entry entry;
        private boolean closed;

        private Lease(Entry entry) {
            this.entry = entry;
        }

        QueryDatabase database() {
            return entry.db;
        }

        @Override
        public void close() {
            synchronized (QueryDatabases.this) {
                if (closed) {
                    return;
                }
                closed = true;
                entry.users--;
                if (entry.retired && entry.users == 0) {
                    dispose(entry);
                }
            }
        }
    }

    private final Path scratch;
    private final int threads;
    private final Map<Key, Entry> open = new LinkedHashMap<>(16, 0.75f, true);

    QueryDatabases(Path scratch, int threads) {
        this.scratch = scratch;
        this.threads = threads;
    }

    /** The environment's database for {@code tables} (its datasets now) with this memory limit. */
    synchronized Lease lease(String environment, long memoryBytes, List<DatasetTable> tables) {
        Key key = new Key(environment, memoryBytes);
        Entry entry = open.get(key);
        if (entry != null && !Objects.equals(entry.tables, tables)) {
            retire(open.remove(key));
            entry = null;
        }
        if (entry == null) {
            Path dir = scratch.resolve(UUID.randomUUID().toString());
            try {
                Files.createDirectories(dir.resolve("out"));
                Files.createDirectories(dir.resolve("spill"));
            } catch (IOException e) {
                throw new SqlFailure(SqlFailure.Reason.FAILED, "cannot make room for queries: " + e.getMessage(), e);
            }
            entry = new Entry(
                    List.copyOf(tables),
                    QueryDatabase.open(tables, memoryBytes, threads, dir.resolve("spill"), dir.resolve("out")),
                    dir);
            open.put(key, entry);
            evictIdle();
        }
        entry.users++;
        return new Lease(entry);
    }

    private void evictIdle() {
        Iterator<Entry> eldest = open.values().iterator();
        while (open.size() > MAX_OPEN && eldest.hasNext()) {
            Entry e = eldest.next();
            if (e.users == 0) {
                eldest.remove();
                dispose(e);
            }
        }
    }

    private void retire(Entry e) {
        e.retired = true;
        if (e.users == 0) {
            dispose(e);
        }
    }

    private static void dispose(Entry e) {
        e.db.close();
        SqlEngine.deleteQuietly(e.dir);
    }

    @Override
    public synchronized void close() {
        for (Entry e : new ArrayList<>(open.values())) {
            retire(e);
        }
        open.clear();
    }
}
