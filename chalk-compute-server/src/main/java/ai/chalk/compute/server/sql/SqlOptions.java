package ai.chalk.compute.server.sql;

import java.time.Duration;

/**
 * The SQL engine's limits.
 *
 * @param defaultMemoryBytes DuckDB's memory limit for a query that names none
 * @param maxMemoryBytes     the most a query may ask for with {@code max_memory_bytes}
 * @param threads            DuckDB threads per query
 * @param inlineLimitBytes   the largest Parquet result returned inline; larger ones need {@code persist}
 * @param shardBytes         the size persisted results are split at
 * @param parallelJobs       how many async queries run at once; more wait (and poll as running)
 * @param memoryBudgetBytes  the memory limits of the DuckDB databases open at once, added up: queries of another limit
 *                           or another environment get a database of their own, each allowed its limit, so without a
 *                           bound on them together concurrent queries had no bound at all; one environment's get at
 *                           most half, which must hold the largest a query may ask for
 * @param timeLimit          the longest one query runs: nothing else stops one that never ends (a cross join of two
 *                           {@code range(1e18)}), and two of them held every async slot of the server
 */
public record SqlOptions(
        long defaultMemoryBytes,
        long maxMemoryBytes,
        int threads,
        long inlineLimitBytes,
        long shardBytes,
        int parallelJobs,
        long memoryBudgetBytes,
        Duration timeLimit) {

    /** The least memory a query may be given: DuckDB needs some to run anything at all. */
    public static final long MIN_MEMORY_BYTES = 32L << 20;

    /**
     * 1 GiB per query (up to 8 GiB on request), every core, 16 MiB inline, 128 MiB shards, 2 async queries, and for
     * all queries together twice the most one may ask for or half the host's memory, the larger, and 30 minutes a
     * query.
     */
    public static SqlOptions defaults() {
        long max = 8L << 30;
        long hostHalf = java.lang.management.ManagementFactory.getOperatingSystemMXBean()
                        instanceof com.sun.management.OperatingSystemMXBean os
                ? os.getTotalMemorySize() / 2
                : 0;
        return new SqlOptions(
                1L << 30,
                max,
                Runtime.getRuntime().availableProcessors(),
                16L << 20,
                128L << 20,
                2,
                Math.max(2 * max, hostHalf),
                Duration.ofMinutes(30));
    }

    public SqlOptions {
        if (defaultMemoryBytes < MIN_MEMORY_BYTES || maxMemoryBytes < defaultMemoryBytes) {
            throw new IllegalArgumentException("memory limits must be at least " + MIN_MEMORY_BYTES
                    + " bytes, the default at most the maximum; got " + defaultMemoryBytes + " and " + maxMemoryBytes);
        }
        if (memoryBudgetBytes / 2 < maxMemoryBytes) {
            throw new IllegalArgumentException(
                    "the SQL memory budget must be at least twice the most a query may ask" + " for (" + maxMemoryBytes
                            + " bytes: one environment's queries get half), got " + memoryBudgetBytes);
        }
        if (timeLimit.isNegative() || timeLimit.isZero()) {
            throw new IllegalArgumentException("the SQL time limit must be positive, got " + timeLimit);
        }
        if (threads < 1 || parallelJobs < 1 || inlineLimitBytes < 1 || shardBytes < (1 << 20)) {
            throw new IllegalArgumentException(
                    "SQL threads, parallel jobs and the inline limit must be positive and" + " shards at least 1 MiB");
        }
    }

    /** The same with another inline limit. */
    public SqlOptions withInlineLimitBytes(long bytes) {
        return new SqlOptions(
                defaultMemoryBytes,
                maxMemoryBytes,
                threads,
                bytes,
                shardBytes,
                parallelJobs,
                memoryBudgetBytes,
                timeLimit);
    }

    /** The same with another memory budget for all queries together. */
    public SqlOptions withMemoryBudgetBytes(long bytes) {
        return new SqlOptions(
                defaultMemoryBytes,
                maxMemoryBytes,
                threads,
                inlineLimitBytes,
                shardBytes,
                parallelJobs,
                bytes,
                timeLimit);
    }

    /** The same with another time limit for one query. */
    public SqlOptions withTimeLimit(Duration limit) {
        return new SqlOptions(
                defaultMemoryBytes,
                maxMemoryBytes,
                threads,
                inlineLimitBytes,
                shardBytes,
                parallelJobs,
                memoryBudgetBytes,
                limit);
    }
}
