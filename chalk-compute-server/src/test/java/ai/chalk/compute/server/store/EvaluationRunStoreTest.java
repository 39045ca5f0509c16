package ai.chalk.compute.server.store;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.store.EvaluationRunStore.RunRecord;
import ai.chalk.compute.server.store.EvaluationRunStore.RunStatus;
import java.nio.file.Path;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Evaluation run records on a real H2 file: the status machine, baseline, archive, and a restart failing open runs. */
class EvaluationRunStoreTest {

    private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");
    private static final byte[] NO_METADATA = new byte[0];

    @TempDir
    Path dir;

    @Test
    void statusMovesForwardOnlyAndEndsOnce() {
        try (Database db = Database.open(dir)) {
            EvaluationRunStore runs = new EvaluationRunStore(db);
            runs.insert("default", "run-1", "eval-1", NO_METADATA, T0);
            assertThat(runs.finalizing("run-1")).as("not RUNNING yet").isFalse();
            assertThat(runs.start("run-1", T0.plusSeconds(1))).isTrue();
            assertThat(runs.start("run-1", T0.plusSeconds(2)))
                    .as("started once")
                    .isFalse();
            assertThat(runs.succeed("run-1", "ds", "rev", new byte[] {1}, T0))
                    .as("not FINALIZING")
                    .isFalse();
            assertThat(runs.finalizing("run-1")).isTrue();
            assertThat(runs.succeed("run-1", "ds-1", "rev-1", new byte[] {7}, T0.plusSeconds(3)))
                    .isTrue();
            assertThat(runs.end("run-1", RunStatus.CANCELED, "too late", T0.plusSeconds(4)))
                    .as("a finished run stays finished")
                    .isFalse();
            RunRecord r = runs.run("default", "run-1").orElseThrow();
            assertThat(r.status()).isEqualTo(RunStatus.SUCCEEDED);
            assertThat(r.startedAt()).isEqualTo(T0.plusSeconds(1));
            assertThat(r.completedAt()).isEqualTo(T0.plusSeconds(3));
            assertThat(r.resultDatasetId()).isEqualTo("ds-1");
            assertThat(r.resultRevisionId()).isEqualTo("rev-1");
            assertThat(r.summary()).containsExactly(7);
            assertThat(r.errorMessage()).isNull();

            runs.insert("default", "run-2", "eval-1", NO_METADATA, T0);
            assertThat(runs.end("run-2", RunStatus.CANCELED, "canceled by the user", T0))
                    .isTrue();
            assertThat(runs.start("run-2", T0))
                    .as("a canceled run never starts")
                    .isFalse();
            assertThat(runs.run("default", "run-2").orElseThrow().errorMessage())
                    .isEqualTo("canceled by the user");
        }
    }

    @Test
    void oneBaselinePerEvaluationArchiveHidesAndEnvironmentsAreSeparate() {
        try (Database db = Database.open(dir)) {
            EvaluationRunStore runs = new EvaluationRunStore(db);
            runs.insert("default", "a", "eval-1", NO_METADATA, T0);
            runs.insert("default", "b", "eval-1", NO_METADATA, T0);
            runs.insert("default", "c", "eval-2", NO_METADATA, T0);
            runs.insert("other", "d", "eval-9", NO_METADATA, T0);

            assertThat(runs.setBaseline("default", "a")).isTrue();
            assertThat(runs.setBaseline("default", "c")).isTrue();
            assertThat(runs.setBaseline("default", "b")).isTrue();
            assertThat(runs.setBaseline("default", "d"))
                    .as("another environment's run")
                    .isFalse();
            assertThat(runs.run("default", "a").orElseThrow().baseline()).isFalse();
            assertThat(runs.run("default", "b").orElseThrow().baseline()).isTrue();
            assertThat(runs.run("default", "c").orElseThrow().baseline())
                    .as("another evaluation's baseline stays")
                    .isTrue();

            assertThat(runs.runs("default", "eval-1", 0, 10))
                    .extracting(RunRecord::id)
                    .containsExactly("a", "b");
            assertThat(runs.archive("default", "a", T0)).isTrue();
            assertThat(runs.archive("other", "b", T0)).isFalse();
            assertThat(runs.runs("default", null, 0, 10))
                    .extracting(RunRecord::id)
                    .containsExactly("b", "c");
            assertThat(runs.run("default", "a").orElseThrow().archivedAt()).isEqualTo(T0);
            assertThat(runs.runs("other", null, 0, 10))
                    .extracting(RunRecord::id)
                    .containsExactly("d");
            assertThat(runs.run("other", "a")).isEmpty();
        }
    }

    @Test
    void aRestartFailsOpenRunsSayingSo() {
        try (Database db = Database.open(dir)) {
            EvaluationRunStore runs = new EvaluationRunStore(db);
            runs.insert("default", "pending", "e", NO_METADATA, T0);
            runs.insert("default", "running", "e", NO_METADATA, T0);
            runs.start("running", T0);
            runs.insert("default", "done", "e", NO_METADATA, T0);
            runs.start("done", T0);
            runs.finalizing("done");
            runs.succeed("done", "ds", "rev", new byte[0], T0);
        }
        try (Database db = Database.open(dir)) {
            EvaluationRunStore runs = new EvaluationRunStore(db);
            assertThat(runs.recover(T0.plusSeconds(60))).isEqualTo(2);
            for (String id : new String[] {"pending", "running"}) {
                RunRecord r = runs.run("default", id).orElseThrow();
                assertThat(r.status()).isEqualTo(RunStatus.FAILED);
                assertThat(r.errorMessage()).isEqualTo(EvaluationRunStore.INTERRUPTED);
                assertThat(r.completedAt()).isEqualTo(T0.plusSeconds(60));
            }
            assertThat(runs.run("default", "done").orElseThrow().status()).isEqualTo(RunStatus.SUCCEEDED);
            assertThat(runs.recover(T0.plusSeconds(61))).isZero();
        }
    }
}
