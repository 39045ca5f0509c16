package ai.chalk.compute.evaluation;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.evaluation.v1.EvaluationRunWaitServiceGrpc;
import ai.chalk.compute.proto.evaluation.v1.WaitEvaluationRunRequest;
import ai.chalk.compute.proto.evaluation.v1.WaitEvaluationRunResponse;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.Authentication;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Waiting for a run without polling it: the server answers a wait as soon as the run leaves the status the caller
 * saw (so {@code await} sees a run's end at once, not at its next poll), or when the wait has passed.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class EvaluationRunWaitTest {

    /** Rows of 4 ms naps: 20 batches of a quarter second, 4 at a time, so the run takes over a second. */
    private static final int ROWS = 1280;

    /** Far longer than the run: a wait answered before it was answered by the run's change, not by its time. */
    private static final com.google.protobuf.Duration LONG_WAIT =
            com.google.protobuf.Duration.newBuilder().setSeconds(60).build();

    @TempDir
    Path dataDir;

    @Test
    void aWaitIsAnsweredWhenTheRunMovesOnAndAfterItsTimeWhenItDoesNot() throws Exception {
        try (ComputeServer server = ComputeServer.builder()
                        .dataDir(dataDir)
                        .auth(Authentication.Mode.NONE)
                        .build()
                        .start();
                SandboxClient client = SandboxClient.inProcess(server.inProcessName())) {
            Evaluation evaluation = EvaluationRunProgressTest.napsEvaluation(client, client.evaluations(), ROWS);
            var waits = EvaluationRunWaitServiceGrpc.newBlockingStub(client.channel());

            EvaluationRun started = evaluation.run();
            // each wait names the status last seen: answered by the next one, long before its 60 s
            List<ai.chalk.compute.proto.evaluation.v1.EvaluationRunStatus> seen = new ArrayList<>();
            WaitEvaluationRunResponse answer = null;
            var status = ai.chalk.compute.proto.evaluation.v1.EvaluationRunStatus.EVALUATION_RUN_STATUS_PENDING;
            long t = System.nanoTime();
            while (!EvaluationRunStatus.of(status).isTerminal()) {
                answer = waits.waitEvaluationRun(WaitEvaluationRunRequest.newBuilder()
                        .setEvaluationRunId(started.id())
                        .setStatus(status)
                        .setTimeout(LONG_WAIT)
                        .build());
                assertThat(answer.getEvaluationRun().getStatus()).isNotEqualTo(status);
                status = answer.getEvaluationRun().getStatus();
                seen.add(status);
            }
            assertThat(Duration.ofNanos(System.nanoTime() - t)).isLessThan(Duration.ofSeconds(50));
            assertThat(seen)
                    .last()
                    .isEqualTo(
                            ai.chalk.compute.proto.evaluation.v1.EvaluationRunStatus.EVALUATION_RUN_STATUS_SUCCEEDED);
            assertThat(answer.getScoreSummary().getMetricsMap()).containsEntry("rows", (double) ROWS);

            // an ended run stays as it is: a wait on its status is answered when the wait has passed
            t = System.nanoTime();
            WaitEvaluationRunResponse unchanged = waits.waitEvaluationRun(WaitEvaluationRunRequest.newBuilder()
                    .setEvaluationRunId(started.id())
                    .setStatus(status)
                    .setTimeout(com.google.protobuf.Duration.newBuilder().setNanos(300_000_000))
                    .build());
            assertThat(Duration.ofNanos(System.nanoTime() - t)).isGreaterThanOrEqualTo(Duration.ofMillis(290));
            assertThat(unchanged.getEvaluationRun().getStatus()).isEqualTo(status);

            // await on a run that ends: it returns with the run as it ended, its summary from the wait's answer
            EvaluationRun run = evaluation.run().await(Duration.ofMinutes(4));
            assertThat(run.status()).isEqualTo(EvaluationRunStatus.SUCCEEDED);
            assertThat(run.scoreSummary().orElseThrow().metrics()).containsEntry("rows", (double) ROWS);

            assertThatThrownBy(() -> waits.waitEvaluationRun(WaitEvaluationRunRequest.newBuilder()
                            .setEvaluationRunId("evr-nope")
                            .setTimeout(LONG_WAIT)
                            .build()))
                    .isInstanceOfSatisfying(
                            StatusRuntimeException.class,
                            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));
        }
    }
}
