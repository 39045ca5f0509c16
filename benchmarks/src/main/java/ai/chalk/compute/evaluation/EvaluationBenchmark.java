package ai.chalk.compute.evaluation;

import ai.chalk.compute.benchmarks.Benchmark;
import ai.chalk.compute.benchmarks.Figures;
import ai.chalk.compute.dataset.Dataset;
import ai.chalk.compute.function.deploy.DeployedFunction;
import ai.chalk.compute.function.remote.RemoteFunction;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.Authentication;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * An evaluation run through the SDK on a server on loopback TCP: a CSV dataset of 10,000 rows (1,000 in a smoke run)
 * uploaded with {@code client.datasets()}, a trivial deployed task ({@link BenchmarkTask#twice}) and three scorers
 * ({@code exact_match}, {@code numeric_close} and the deployed {@link BenchmarkTask#withinOne}), from
 * {@code Evaluation.run} until {@code await} returns. Its rows per second stand next to the raw {@code callBatch}
 * throughput of the same functions over the same rows in the same run: the task's in one {@code callBatch} of all rows;
 * the task's in batches of 64 rows from 4 callers (the task batches and concurrency the server's run uses); and the
 * calls the run makes, the task's as before then the function scorer's on the answered rows in batches of 512 from 4
 * callers (the run also scores with the built-ins and writes its result dataset, so a ratio of 1 is out of reach).
 * The run's time as the SDK sees it includes
 * {@code await}'s wait for the run's end (a wait on the server, answered when the run ends); a third figure is the
 * server's own span of the run.
 *
 * <p>Twelve rounds of one run and one {@code callBatch} of each kind go first as warm-up ({@link #WARM_UPS}; two in a smoke run): the
 * replicas are started, and the JIT compilers of this JVM and of the workers have seen the paths measured. Then rounds
 * of one run and one {@code callBatch} of each kind follow each other (5 rounds, 3 in a smoke run), and each figure is the median of its
 * rounds: a single measure of a few hundred milliseconds swung twofold with what else the machine did at that moment
 * (one quiet suite measured the baseline at 49,600 rows/s, the next at 23,400), and interleaving the rounds gives the
 * run and its baseline the same moments.
 */
public final class EvaluationBenchmark implements Benchmark {

    /**
     * Warm-up rounds of the run and both baselines: with one, the baseline measured alone ran at two thirds of what it
     * reached after the function-call benchmark had warmed the same paths in the suite, and the run at two thirds of
     * what it reaches after three. After three, the JIT compilers still took 100-230 ms of CPU during each measured
     * run (by the JVM's threads' CPU times, on two cores), as much as the run's own threads; after twelve, compilations
     * per round fall from round to round (180, 139, 102, 70), and no method is compiled again and again. A round takes
     * about half a second.
     */
    private static final int WARM_UPS = 12;

    /** The server's rows per task batch and batches in flight (EvaluationRuns), for the comparable baseline. */
    private static final int BATCH_ROWS = 64;

    private static final int CALLERS = 4;

    /** The server's answered rows per function scorer call (EvaluationRuns), for the baseline of the run's calls. */
    private static final int SCORER_BATCH_ROWS = 512;

    @Override
    public void run(Figures figures, Path dataDir) throws Exception {
        int rows = figures.smoke() ? 1_000 : 10_000;
        Path csv = dataDir.resolve("rows.csv");
        StringBuilder text = new StringBuilder("x,expected\n");
        List<Object[]> calls = new ArrayList<>(rows);
        List<Object[]> scorerCalls = new ArrayList<>(rows);
        for (long x = 0; x < rows; x++) {
            text.append(x).append(',').append(2 * x).append('\n');
            calls.add(new Object[] {x});
            scorerCalls.add(new Object[] {2 * x, 2 * x}); // expected, output
        }
        Files.writeString(csv, text, StandardCharsets.UTF_8);
        try (ComputeServer server = ComputeServer.builder()
                        .dataDir(dataDir.resolve("server"))
                        .port(0)
                        .auth(Authentication.Mode.NONE)
                        .build()
                        .start();
                SandboxClient client =
                        SandboxClient.connect("localhost:" + server.port().orElseThrow())) {
            Dataset dataset = client.datasets().upload("evaluation-benchmark", csv);
            List<DeployedFunction> deployed = client.functions().deploy(BenchmarkTask.class);
            for (DeployedFunction d : deployed) {
                d.await(Duration.ofMinutes(2));
            }
            Evaluation evaluation = client.evaluations()
                    .create(
                            "EvaluationBenchmark",
                            dataset,
                            named(deployed, "twice"),
                            List.of(Scorers.exactMatch(), Scorers.numericClose(0.5), named(deployed, "withinOne")));
            RemoteFunction twice = RemoteFunction.fromName(client, "twice");
            RemoteFunction withinOne = RemoteFunction.fromName(client, "withinOne");

            // a smoke run's figures are not compared, so its warm-up only has to reach every path once
            for (int i = 0; i < (figures.smoke() ? 2 : WARM_UPS); i++) {
                runOnce(evaluation, rows);
                oneBatch(twice, calls);
                batches(twice, calls, BATCH_ROWS, EvaluationBenchmark::checkTwice);
                batches(withinOne, scorerCalls, SCORER_BATCH_ROWS, EvaluationBenchmark::checkScore);
            }

            int rounds = figures.smoke() ? 3 : 5;
            double[] runs = new double[rounds];
            double[] servers = new double[rounds];
            double[] ones = new double[rounds];
            double[] batched = new double[rounds];
            double[] runsCalls = new double[rounds];
            for (int round = 0; round < rounds; round++) {
                Timed measured = runOnce(evaluation, rows);
                runs[round] = measured.seconds();
                // the server's own span of the run (started to completed): the above less the SDK's requests
                EvaluationRun run = measured.run();
                servers[round] = Duration.between(
                                        run.startedAt().orElseThrow(),
                                        run.completedAt().orElseThrow())
                                .toNanos()
                        / 1e9;
                batched[round] = batches(twice, calls, BATCH_ROWS, EvaluationBenchmark::checkTwice);
                runsCalls[round] = batched[round]
                        + batches(withinOne, scorerCalls, SCORER_BATCH_ROWS, EvaluationBenchmark::checkScore);
                ones[round] = oneBatch(twice, calls);
            }
            double runSeconds = median(runs);
            double oneBatchSeconds = median(ones);
            double batchesSeconds = median(batched);
            figures.value(
                    "evaluation: " + rows + " rows, 3 scorers",
                    "rows/s",
                    rows / runSeconds,
                    "callBatch of the task, all rows at once",
                    rows / oneBatchSeconds);
            figures.value(
                    "evaluation: " + rows + " rows, 3 scorers",
                    "rows/s",
                    rows / runSeconds,
                    "callBatch of the task, " + BATCH_ROWS + "-row batches, " + CALLERS + " callers",
                    rows / batchesSeconds);
            figures.value(
                    "evaluation: " + rows + " rows, 3 scorers",
                    "rows/s",
                    rows / runSeconds,
                    "callBatch of the calls the run makes: the task's " + BATCH_ROWS + "-row batches, then the"
                            + " function scorer's " + SCORER_BATCH_ROWS + "-row batches, " + CALLERS + " callers",
                    rows / median(runsCalls));
            double serverSeconds = median(servers);
            figures.value(
                    "evaluation: " + rows + " rows, on the server (started → completed)",
                    "rows/s",
                    rows / serverSeconds,
                    "callBatch of the task, " + BATCH_ROWS + "-row batches, " + CALLERS + " callers",
                    rows / batchesSeconds);
        }
    }

    /** The median of an odd number of measures. */
    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }

    /** A run that succeeded and the seconds from its request until {@code await} saw it succeeded. */
    private record Timed(EvaluationRun run, double seconds) {}

    /** Runs the evaluation once, timed from the request until {@code await} sees the run succeeded. */
    private static Timed runOnce(Evaluation evaluation, int rows) {
        long t = System.nanoTime();
        EvaluationRun run = evaluation.run().await(Duration.ofMinutes(5));
        double seconds = (System.nanoTime() - t) / 1e9;
        if (run.status() != EvaluationRunStatus.SUCCEEDED) {
            throw new IllegalStateException("the benchmark's run did not succeed: " + run);
        }
        ScoreSummary summary = run.scoreSummary().orElseThrow();
        double average = summary.averageScore().orElse(Double.NaN);
        if (summary.metrics().getOrDefault("rows", 0.0) != rows || average != 1.0) {
            throw new IllegalStateException("the benchmark's run scored wrong: " + summary.format());
        }
        return new Timed(run, seconds);
    }

    /** One {@code callBatch} of all rows; returns its seconds. */
    private static double oneBatch(RemoteFunction task, List<Object[]> calls) {
        long t = System.nanoTime();
        List<Object> out = task.callBatch(calls);
        double seconds = (System.nanoTime() - t) / 1e9;
        checkTwice(out, calls, 0);
        return seconds;
    }

    /** What a batch's answers must be: {@code (answers, calls, offset of the first call)}. */
    private interface Check {
        void check(List<Object> out, List<Object[]> calls, int offset);
    }

    /** All calls in batches of {@code size}, {@link #CALLERS} batches in flight; returns the seconds. */
    private static double batches(RemoteFunction function, List<Object[]> calls, int size, Check check)
            throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(CALLERS);
        try {
            long t = System.nanoTime();
            List<Future<?>> inFlight = new ArrayList<>();
            for (int from = 0; from < calls.size(); from += size) {
                int start = from;
                List<Object[]> batch = calls.subList(from, Math.min(calls.size(), from + size));
                inFlight.add(pool.submit(() -> check.check(function.callBatch(batch), batch, start)));
            }
            for (Future<?> f : inFlight) {
                f.get();
            }
            return (System.nanoTime() - t) / 1e9;
        } finally {
            pool.shutdownNow();
        }
    }

    /** A batch of the task whose answers are wrong would measure nothing. */
    private static void checkTwice(List<Object> out, List<Object[]> calls, int offset) {
        if (out.size() != calls.size()) {
            throw new IllegalStateException(calls.size() + " calls, " + out.size() + " answers (from " + offset + ")");
        }
        for (int i = 0; i < out.size(); i++) {
            if (((Number) out.get(i)).longValue() != 2 * (Long) calls.get(i)[0]) {
                throw new IllegalStateException("twice(" + calls.get(i)[0] + ") answered " + out.get(i));
            }
        }
    }

    /** A batch of the function scorer: every answer scores 1 (the output is the expected value). */
    private static void checkScore(List<Object> out, List<Object[]> calls, int offset) {
        if (out.size() != calls.size()) {
            throw new IllegalStateException(calls.size() + " calls, " + out.size() + " answers (from " + offset + ")");
        }
        for (int i = 0; i < out.size(); i++) {
            Object score = out.get(i) instanceof EvaluationScorerResult r
                    ? (Object) r.score()
                    : out.get(i) instanceof java.util.Map<?, ?> m ? m.get("score") : out.get(i);
            if (!(score instanceof Number n) || n.doubleValue() != 1.0) {
                throw new IllegalStateException("withinOne(" + calls.get(i)[0] + ") answered " + out.get(i));
            }
        }
    }

    private static DeployedFunction named(List<DeployedFunction> deployed, String name) {
        return deployed.stream()
                .filter(d -> d.name().equals(name))
                .findFirst()
                .orElseThrow(() -> new IllegalStateException("no deployed function " + name));
    }
}
