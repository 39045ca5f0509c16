package ai.chalk.compute.server.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The pools' bookkeeping for deleted versions. A deleted revision is refused before anything of a pool is made, so the
 * runtime, Java and logs a pool would start replicas with are not given (null): reaching them fails the test.
 * Replicas stopping on delete, end to end, are in {@code SharedReplicasTest}.
 */
class WorkerPoolsTest {

    @TempDir
    Path dir;

    @Test
    void aDeletedVersionsRevisionGetsNoPoolAgainWhateverStillHoldsTheVersion() {
        ExecutorService executor = Executors.newSingleThreadExecutor();
        try {
            WorkerPools pools = new WorkerPools(null, null, null, dir, executor, Optional.empty(), null, null);
            pools.delete("sgr-deleted");
            // a call queued before the delete, or an evaluation run's next batch, asks for the revision's pool
            assertThatThrownBy(() -> pools.pool(
                            "sgr-deleted",
                            "unit",
                            () -> {
                                throw new AssertionError("no replica is launched for a deleted version");
                            },
                            () -> {
                                throw new AssertionError("no pool is scaled for a deleted version");
                            },
                            status -> {}))
                    .isInstanceOfSatisfying(
                            StatusRuntimeException.class,
                            e -> assertThat(e.getStatus().getCode()).isEqualTo(io.grpc.Status.Code.NOT_FOUND))
                    .hasMessageContaining("this version of the function was deleted");
            assertThat(pools.size()).isZero();
            assertThat(pools.existing("sgr-deleted")).isEmpty();
        } finally {
            executor.shutdownNow();
        }
    }
}
