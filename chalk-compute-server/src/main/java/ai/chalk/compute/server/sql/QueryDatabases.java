package ai.chalk.compute.server.sql;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;

/**
 * The locked {@link QueryDatabase} of each environment (and memory limit), kept while the environment's datasets stay
 * as they are, so a query finds DuckDB started, its views bound and its caches warm. A database is replaced when the
 * tables change, and closed once the queries using it end.
 *
 * <p>Every database is a DuckDB of its own, with its own memory limit and threads, so the databases alive at once
 * (kept, or replaced but still running a query) are bounded: at most {@link #MAX_OPEN} of them, their memory limits
 * adding up to at most the budget ({@link SqlOptions#memoryBudgetBytes}), one environment's to at most half of both,
 * and at most {@link #MAX_QUERIES} queries at once (each holds a thread of the server), one environment's at most half.
 * Before, a tenant running queries at once with as many memory limits (or changing a dataset while its queries ran)
 * got a DuckDB for each, and their limits together were more than the host's memory. Idle databases make room first;
 * past that, a query is refused (RESOURCE_EXHAUSTED) saying which bound it met.
 */
final class QueryDatabases implements AutoCloseable {

    static final int MAX_OPEN = 16;
    static final int MAX_QUERIES = 64;

    private record Key(String environment, long memoryBytes) {}

    private static final class Entry {
        final Key key;
        final List<DatasetTable> tables;
        final Path dir;
        /** Completes with the database once it is open (its views made), outside this class's lock. */
        final CompletableFuture<QueryDatabase> db = new CompletableFuture<>();

        int users;
        boolean retired;

        Entry(Key key, List<DatasetTable> tables, Path dir) {
            this.key = key;
            this.tables = tables;
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
            return entry.db.join(); // a lease is given once its database is open
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
                    alive.remove(entry);
                    dispose(entry);
                }
            }
        }
    }

    private final Path scratch;
    private final int threads;
    private final long memoryBudget;
    /** The databases kept for new queries, least recently used first. */
    private final Map<Key, Entry> open = new LinkedHashMap<>(16, 0.75f, true);
    /** Every database not yet closed: those kept, and those replaced while a query still ran on them. */
    private final List<Entry> alive = new ArrayList<>();

    QueryDatabases(Path scratch, int threads, long memoryBudget) {
        this.scratch = scratch;
        this.threads = threads;
        this.memoryBudget = memoryBudget;
    }

    /**
     * The environment's database for {@code tables} (its datasets now) with this memory limit.
     *
     * @throws SqlFailure (TOO_LARGE) when the query does not fit the bounds on databases and queries at once
     */
    Lease lease(String environment, long memoryBytes, List<DatasetTable> tables) {
        Reserved reserved;
        synchronized (this) {
            reserved = reserve(environment, memoryBytes, tables);
        }
        Entry entry = reserved.entry();
        boolean opens = reserved.created();
        // opening makes a view per revision, each reading its file's footer: seconds for thousands of them, during
        // which every other environment's queries (and ends of queries) waited on this lock
        if (opens) {
            try {
                entry.db.complete(QueryDatabase.open(
                        tables, memoryBytes, threads, entry.dir.resolve("spill"), entry.dir.resolve("out")));
            } catch (RuntimeException | Error e) {
                entry.db.completeExceptionally(e); // whatever it was, the queries waiting for it hear of it
            }
        }
        try {
            entry.db.join();
        } catch (java.util.concurrent.CompletionException e) {
            synchronized (this) {
                entry.users--;
                if (open.get(entry.key) == entry) {
                    open.remove(entry.key);
                }
                if (entry.users == 0 && alive.remove(entry)) {
                    SqlEngine.deleteQuietly(entry.dir);
                }
            }
            throw e.getCause() instanceof RuntimeException r ? r : e;
        }
        return new Lease(entry);
    }

    /**
     * The entry a query uses, counted as its user: the one kept for the key and tables, or a new one whose database
     * the caller opens (its memory counted against the bounds from now on).
     */
    private Reserved reserve(String environment, long memoryBytes, List<DatasetTable> tables) {
        Key key = new Key(environment, memoryBytes);
        int queries = 0;
        int mine = 0;
        for (Entry e : alive) {
            queries += e.users;
            mine += e.key.environment().equals(environment) ? e.users : 0;
        }
        if (mine >= MAX_QUERIES / 2) {
            throw refused("this environment runs " + mine + " queries at once, the most one environment may (half of"
                    + " the " + MAX_QUERIES + " the server runs): wait for one to end");
        }
        if (queries >= MAX_QUERIES) {
            throw refused("the server runs " + queries + " queries at once, its limit: try again once one has ended");
        }
        Entry entry = open.get(key);
        if (entry != null && !Objects.equals(entry.tables, tables)) {
            retire(open.remove(key));
            entry = null;
        }
        if (entry == null) {
            makeRoom(key);
            Path dir = scratch.resolve(UUID.randomUUID().toString());
            try {
                Files.createDirectories(dir.resolve("out"));
                Files.createDirectories(dir.resolve("spill"));
            } catch (IOException e) {
                throw new SqlFailure(SqlFailure.Reason.FAILED, "cannot make room for queries: " + e.getMessage(), e);
            }
            entry = new Entry(key, List.copyOf(tables), dir);
            open.put(key, entry);
            alive.add(entry);
            entry.users++;
            return new Reserved(entry, true);
        }
        entry.users++;
        return new Reserved(entry, false);
    }

    /** An entry a query will use, and whether it is new (the query opens its database). */
    private record Reserved(Entry entry, boolean created) {}

    /**
     * Closes idle databases, least recently used first, until one more with {@code key}'s memory limit fits the
     * bounds, its environment's share included (only that environment's own idle ones count towards that).
     */
    private void makeRoom(Key key) {
        while (true) {
            Over over = over(key);
            if (over == null) {
                return;
            }
            Entry idle = null;
            for (Entry e : open.values()) {
                if (e.users == 0
                        && (!over.environmentsShare() || e.key.environment().equals(key.environment()))) {
                    idle = e;
                    break;
                }
            }
            if (idle == null) {
                throw refused(over.message());
            }
            open.remove(idle.key);
            alive.remove(idle);
            dispose(idle);
        }
    }

    /** A bound a new database would pass: its environment's share (else the server's limit), and what to tell. */
    private record Over(boolean environmentsShare, String message) {}

    /** Which bound a new database for {@code key} would pass, or null when it fits. */
    private Over over(Key key) {
        long memory = 0;
        long mineMemory = 0;
        int mine = 0;
        for (Entry e : alive) {
            memory += e.key.memoryBytes();
            if (e.key.environment().equals(key.environment())) {
                mineMemory += e.key.memoryBytes();
                mine++;
            }
        }
        if (mine + 1 > MAX_OPEN / 2 || mineMemory + key.memoryBytes() > memoryBudget / 2) {
            return new Over(
                    true,
                    "this environment's queries have " + mine + " databases with " + mebibytes(mineMemory)
                            + " of memory between them, and one more with " + mebibytes(key.memoryBytes())
                            + " would pass its"
                            + " share (half of the server's " + MAX_OPEN + " databases and " + mebibytes(memoryBudget)
                            + "; a database per memory limit): wait for queries to end, or ask for the same max_memory_bytes"
                            + " as queries running now, or for less");
        }
        if (alive.size() + 1 > MAX_OPEN || memory + key.memoryBytes() > memoryBudget) {
            return new Over(
                    false,
                    "the server's queries have " + alive.size() + " databases with " + mebibytes(memory) + " of memory"
                            + " between them, and one more with " + mebibytes(key.memoryBytes())
                            + " would pass its limit ("
                            + MAX_OPEN + " databases, " + mebibytes(memoryBudget)
                            + "): try again once queries have ended");
        }
        return null;
    }

    private static String mebibytes(long bytes) {
        return (bytes >> 20) + " MiB";
    }

    private static SqlFailure refused(String message) {
        return new SqlFailure(SqlFailure.Reason.TOO_LARGE, message + " (the query did not run: send it again then)");
    }

    private void retire(Entry e) {
        e.retired = true;
        if (e.users == 0) {
            alive.remove(e);
            dispose(e);
        }
    }

    private static void dispose(Entry e) {
        if (e.db.isDone() && !e.db.isCompletedExceptionally()) {
            e.db.join().close();
        }
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
