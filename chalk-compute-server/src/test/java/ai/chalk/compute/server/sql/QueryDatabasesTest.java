package ai.chalk.compute.server.sql;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The databases of every environment's queries, made and lent while other environments query. */
class QueryDatabasesTest {

    @TempDir
    Path dir;

    /**
     * The attack: an environment whose database takes long to open (a view per revision, each reading its file's
     * footer; thousands of revisions, or huge footers). It was opened under the lock every lease and every end of a
     * query takes, so every other environment's SQL waited. Here the footer is a pipe nobody writes yet.
     */
    @Test
    void anEnvironmentWhoseDatabaseIsSlowToOpenHoldsUpNoOtherEnvironmentsQueries() throws Exception {
        Path pipe = dir.resolve("slow.parquet");
        assertThat(new ProcessBuilder("mkfifo", pipe.toString()).start().waitFor())
                .isZero();
        Path fast = ParquetFiles.write(dir.resolve("fast.parquet"), "SELECT 1 AS n");
        try (QueryDatabases databases = new QueryDatabases(dir.resolve("scratch"), 1, 4L << 30)) {
            CompletableFuture<QueryDatabases.Lease> slow = CompletableFuture.supplyAsync(() -> databases.lease(
                    "slow", 256L << 20, List.of(new DatasetTable("slow", "r-slow", List.of(pipe), true))));
            Thread.sleep(500); // opening, reading the pipe
            assertThat(slow).isNotDone();

            try {
                CompletableFuture<QueryDatabases.Lease> other = CompletableFuture.supplyAsync(() -> databases.lease(
                        "other", 256L << 20, List.of(new DatasetTable("fast", "r-fast", List.of(fast), true))));
                try (QueryDatabases.Lease lease = other.get(10, TimeUnit.SECONDS)) {
                    assertThat(lease.database()).isNotNull();
                }
            } finally {
                // the footer arrives (whatever happened above, so that closing the databases does not wait for good)
                try (OutputStream out = Files.newOutputStream(pipe)) {
                    out.write(Files.readAllBytes(fast));
                } catch (java.io.IOException e) {
                    // the engine stopped reading (a pipe cannot be seeked in): its lease fails, which is all it needs
                }
            }
            slow.handle((lease, failure) -> {
                        if (lease != null) {
                            lease.close();
                        }
                        return null;
                    })
                    .get(30, TimeUnit.SECONDS);
        }
    }
}
