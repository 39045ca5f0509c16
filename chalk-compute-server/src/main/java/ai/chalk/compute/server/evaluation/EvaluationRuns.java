package ai.chalk.compute.server.evaluation;

import ai.chalk.compute.proto.common.v1.ChalkError;
import ai.chalk.compute.proto.evaluation.v1.EvaluationScoreSummary;
import ai.chalk.compute.proto.evaluation.v1.EvaluationScorer;
import ai.chalk.compute.proto.runtime.v1.CallFunctionRequest;
import ai.chalk.compute.server.dataset.DatasetManager;
import ai.chalk.compute.server.dataset.DatasetManager.ReadableRevision;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.evaluation.BuiltinRowScoring.Cell;
import ai.chalk.compute.server.evaluation.RowPayloads.UnfitValueException;
import ai.chalk.compute.server.evaluation.RunTables.ResultRow;
import ai.chalk.compute.server.exec.ByteBudget;
import ai.chalk.compute.server.function.FunctionCalls;
import ai.chalk.compute.server.function.FunctionWorkers;
import ai.chalk.compute.server.store.EvaluationRunStore;
import ai.chalk.compute.server.store.EvaluationRunStore.RunRecord;
import ai.chalk.compute.server.store.EvaluationRunStore.RunStatus;
import ai.chalk.compute.server.store.EvaluationStore.EvaluationRecord;
import ai.chalk.compute.server.store.FunctionStore;
import ai.chalk.compute.server.store.FunctionStore.VersionRecord;
import ai.chalk.compute.server.threads.EnvironmentShares;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.ByteString;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Clock;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Queue;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Executes evaluation runs in the server: the pinned revision's rows go in batches through the task version's replicas
 * ({@link FunctionCalls}, the pool and concurrency of remote calls), the answered rows through each function scorer the
 * same way and through the built-ins in-process, and the result becomes a dataset revision and a score summary.
 *
 * <p>A batch the task fails as a user failure (the protocol's {@code chalk-error-bin}) is retried row by row, so only
 * the rows that fail are failed; any other failure (no replica can start, the version serves no such function) means
 * the task cannot run at all, and the run FAILS. A scorer's failure is that scorer's on those rows.
 */
final class EvaluationRuns {

    private static final Logger log = LoggerFactory.getLogger(EvaluationRuns.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Rows per call: enough to spread a call's overhead, few enough that a failing row costs little to isolate. */
    static final int BATCH_ROWS = 64;
    /** Batches in flight per run; the pool queues what its replicas cannot take yet and scales up meanwhile. */
    static final int PARALLEL_BATCHES = 4;
    /**
     * Answered rows per function scorer call: scorers see rows only once the task has answered them, so their calls
     * gather several task batches (fewer calls per row) and run beside the task batches that follow. 512 rather than
     * 256: a function scorer's call costs its worker and the server more than its rows do (EvaluationBenchmark:
     * 10,000 rows in 40 calls of 256 cost the scorer's worker 110-230 ms of CPU, in 10 calls of 1,024 100-130 ms),
     * while a slow scorer (a judge) keeps a dataset of a few thousand rows spread over its batches in flight.
     */
    static final int SCORER_BATCH_ROWS = 512;

    /** The task cannot run at all: the run fails with this message. */
    private static final class TaskCannotRunException extends Exception {
        TaskCannotRunException(String message) {
            super(message);
        }
    }

    /**
     * The server is stopping under the run: its record stays open, and the next start fails it saying so
     * ({@link EvaluationRunStore#recover}), as after a crash.
     */
    private static final class ServerStoppingException extends Exception {
        ServerStoppingException() {
            super("the server is stopping");
        }
    }

    /** One function an evaluation calls: its version, the name calls use, and its payloads. */
    private record Called(String what, VersionRecord version, String name, RowPayloads payloads) {}

    /** The outcome of one row's call: its answer, or why it failed. */
    private record Outcome(@Nullable Object value, @Nullable String error) {}

    private final EvaluationRunStore runs;
    private final DatasetManager datasets;
    private final FunctionStore functions;
    private final FunctionCalls calls;
    private final EvaluationPins pins;
    private final RunTables tables;
    private final Path workDir;
    private final ExecutorService executor;
    /** What the runs under way may hold in the heap together. */
    private final EvaluationMemory memory;

    private final Clock clock;
    private final Map<String, AtomicBoolean> canceled = new ConcurrentHashMap<>();
    private final Map<String, RunProgress> progress = new ConcurrentHashMap<>();
    /** Set as the server stops: what fails from then on is the stop's doing, not the run's. */
    private volatile boolean stopping;

    EvaluationRuns(
            EvaluationRunStore runs,
            DatasetManager datasets,
            FunctionStore functions,
            FunctionCalls calls,
            EvaluationPins pins,
            Path workDir,
            ExecutorService executor,
            ByteBudget memory,
            Clock clock) {
        this.runs = runs;
        this.datasets = datasets;
        this.functions = functions;
        this.calls = calls;
        this.pins = pins;
        this.tables = new RunTables(workDir);
        this.workDir = workDir;
        this.executor = executor;
        this.memory = new EvaluationMemory(memory);
        this.clock = clock;
    }

    /**
     * Runs under way at once: each holds a thread of the server from its start to its verdict, and a few more while
     * its batches wait for their functions, so there are at most this many, one environment's at most half.
     */
    static final int MAX_UNDER_WAY = 32;

    private final EnvironmentShares underWay = new EnvironmentShares("evaluation runs", MAX_UNDER_WAY);

    /**
     * Takes a place for a run of {@code environment} about to be created, held by the run {@link #start} starts in it
     * until it ends; closed by the caller when the run is not created after all.
     *
     * @throws ComputeException (RESOURCE_EXHAUSTED) when the environment has its share of runs under way, or the
     *     server all of them
     */
    EnvironmentShares.Place admit(String environment) {
        return underWay.take(environment, EvaluationRuns::refusal);
    }

    private static String refusal(EnvironmentShares.Refusal refusal, EnvironmentShares underWay, String environment) {
        return refusal == EnvironmentShares.Refusal.ENVIRONMENT_SHARE
                ? "this environment has " + underWay.held(environment) + " evaluation runs under way, the most one"
                        + " environment may (half of the " + MAX_UNDER_WAY + " the server runs): wait for one to"
                        + " finish, or archive one (ArchiveEvaluationRun cancels a run under way; its place is free"
                        + " once the run stops, when a batch it had in flight ends)"
                : "the server has " + underWay.held() + " evaluation runs under way, its limit: try again once one has"
                        + " finished";
    }

    /** Starts executing a PENDING run in the background, in the place {@link #admit} took for it. */
    void start(
            EnvironmentShares.Place place, RunRecord run, EvaluationRecord evaluation, List<EvaluationScorer> scorers) {
        AtomicBoolean flag = new AtomicBoolean();
        canceled.put(run.id(), flag);
        try {
            executor.execute(() -> {
                try {
                    execute(run, evaluation, scorers, flag, place);
                } finally {
                    canceled.remove(run.id());
                    place.close();
                }
            });
        } catch (RuntimeException e) {
            canceled.remove(run.id());
            place.close();
            throw e;
        }
    }

    /**
     * The server is stopping: runs under way end without a verdict (their replicas and store are going), and the
     * next start fails them saying a restart interrupted them.
     */
    void stop() {
        stopping = true;
        canceled.values().forEach(flag -> flag.set(true));
        tables.close();
    }

    /** Cancels an open run: CANCELED at once, its batches in flight finish and nothing more is called. */
    boolean cancel(String runId, String why) {
        AtomicBoolean flag = canceled.get(runId);
        if (flag != null) {
            flag.set(true);
        }
        return runs.end(runId, RunStatus.CANCELED, why, clock.instant());
    }

    /**
     * Executes a run in its place, given back before the verdict is stored, so that a client who
     * starts its next run as soon as it sees this one's verdict finds the place free.
     */
    private void execute(
            RunRecord run,
            EvaluationRecord e,
            List<EvaluationScorer> scorers,
            AtomicBoolean stop,
            EnvironmentShares.Place place) {
        if (!runs.start(run.id(), clock.instant())) {
            return; // canceled before it started
        }
        Path resultFile = workDir.resolve(run.id() + ".parquet");
        List<String> ids = scorers.stream().map(EvaluationScorer::getId).toList();
        RunResult result = null;
        RunMemory held = new RunMemory(memory, run.environment());
        try {
            long began = System.nanoTime();
            ReadableRevision revision = datasets.readableRevision(run.environment(), e.datasetRevisionId());
            result = tables.begin(revision.files(), ids, executor);
            List<Map<String, @Nullable Object>> rows = result.rows(held);
            long read = System.nanoTime();
            Called task = called("the task function", run.environment(), e.taskVersionId());
            Map<String, Called> scorerFunctions = new LinkedHashMap<>();
            for (EvaluationScorer s : scorers) {
                if (s.getSpec().hasFunction()) {
                    scorerFunctions.put(
                            s.getId(),
                            called(
                                    "scorer " + s.getId(),
                                    run.environment(),
                                    s.getSpec().getFunction().getFunctionVersionId()));
                }
            }
            BuiltinRowScoring builtins = new BuiltinRowScoring(scorers, pins.builtins(run.environment()));
            ResultRow[] results = new ResultRow[rows.size()];
            RunProgress runProgress = new RunProgress(rows.size());
            progress.put(run.id(), runProgress);
            Pipeline pipeline =
                    new Pipeline(rows, task, scorers, scorerFunctions, builtins, results, runProgress, result, held);
            List<Future<?>> inFlight = new ArrayList<>();
            // a batch starts as soon as any of those in flight ends (waiting for the oldest left the others' slots
            // idle while it lagged); a failure is seen as soon as its batch ends
            Semaphore slots = new Semaphore(PARALLEL_BATCHES);
            for (int from = 0; from < rows.size(); from += BATCH_ROWS) {
                if (stop.get()) {
                    return;
                }
                try {
                    slots.acquire();
                } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                    throw new ServerStoppingException();
                }
                for (java.util.Iterator<Future<?>> it = inFlight.iterator(); it.hasNext(); ) {
                    Future<?> f = it.next();
                    if (f.isDone()) {
                        it.remove();
                        await(f);
                    }
                }
                int start = from;
                int end = Math.min(rows.size(), from + BATCH_ROWS);
                try {
                    inFlight.add(executor.submit(() -> {
                        try {
                            pipeline.taskBatch(start, end);
                        } finally {
                            slots.release();
                        }
                        pipeline.result.advance(results);
                        return null;
                    }));
                } catch (RuntimeException ex) {
                    slots.release();
                    throw ex;
                }
            }
            for (Future<?> f : inFlight) {
                await(f);
            }
            long tasks = System.nanoTime();
            pipeline.flush();
            for (Future<?> f; (f = pipeline.scoring.poll()) != null; ) {
                await(f);
            }
            if (stop.get() || stopping || !runs.finalizing(run.id())) {
                return; // canceled meanwhile, or the server is stopping
            }
            long scored = System.nanoTime();
            // the summary is computed beside the result file (it reads only the results): the file is written by one
            // thread, and the summary after it kept the run's end on one core
            Future<EvaluationScoreSummary> summarized = executor.submit(() -> summary(e, run, scorers, results));
            DatasetManager.Shape shape;
            DatasetManager.Written written;
            long file;
            try {
                shape = result.finish(results, resultFile);
                file = System.nanoTime();
                written = datasets.storeParquet(run.environment(), resultName(run.id()), resultFile, shape);
            } catch (SQLException | RuntimeException ex) {
                summarized.cancel(true);
                throw ex;
            }
            long stored = System.nanoTime();
            EvaluationScoreSummary summary = await(summarized);
            held.close();
            place.close();
            runs.succeed(
                    run.id(), written.dataset().id(), written.revisionId(), summary.toByteArray(), clock.instant());
            long end = System.nanoTime();
            log.info(
                    "Evaluation run {}: {} rows in {} ms (reading {} ms, task batches {} ms, scorers after them {} ms,"
                            + " result file {} ms, storing it {} ms, summary {} ms)",
                    run.id(),
                    rows.size(),
                    (end - began) / 1_000_000,
                    (read - began) / 1_000_000,
                    (tasks - read) / 1_000_000,
                    (scored - tasks) / 1_000_000,
                    (file - scored) / 1_000_000,
                    (stored - file) / 1_000_000,
                    (end - stored) / 1_000_000);
        } catch (ServerStoppingException | java.util.concurrent.RejectedExecutionException ex) {
            log.info("Evaluation run {} stops with the server; the next start fails it", run.id());
        } catch (TaskCannotRunException | ComputeException | RunMemory.ExceededException ex) {
            if (!stopping) {
                log.info("Evaluation run {} FAILED: {}", run.id(), ex.getMessage());
                held.close();
                place.close();
                runs.end(run.id(), RunStatus.FAILED, ex.getMessage(), clock.instant());
            }
        } catch (SQLException | IOException | RuntimeException ex) {
            if (stopping) {
                return;
            }
            log.warn("Evaluation run {} failed on the server", run.id(), ex);
            held.close();
            place.close();
            runs.end(
                    run.id(),
                    RunStatus.FAILED,
                    "the run failed on the server: "
                            + String.valueOf(ex.getMessage()).replace(workDir.toString(), "<work-dir>"),
                    clock.instant());
        } finally {
            progress.remove(run.id());
            held.close(); // first: batches still in flight reserve nothing from here on
            if (result != null) {
                result.close();
            }
            try {
                Files.deleteIfExists(resultFile);
            } catch (IOException ex) {
                log.warn("Could not delete {}: {}", resultFile, ex.toString());
            }
        }
    }

    /** The run's score summary from its rows' results. */
    private EvaluationScoreSummary summary(
            EvaluationRecord e, RunRecord run, List<EvaluationScorer> scorers, ResultRow[] results) {
        List<ScoreSummaries.RowScores> rowScores = new ArrayList<>(results.length);
        for (ResultRow r : results) {
            rowScores.add(
                    taskFailed(r)
                            ? new ScoreSummaries.RowScores(r.error(), List.of())
                            : ScoreSummaries.answered(r.scores()));
        }
        return ScoreSummaries.summarize(e.id(), run.id(), scorers, rowScores, clock.instant());
    }

    /** The name of a run's result dataset: SQL reads it as {@code chalk.datasets.<name>} without quoting. */
    static String resultName(String runId) {
        return "eval_run_" + runId.replaceAll("[^A-Za-z0-9]", "");
    }

    /** Whether the row's error is its task's (a scorer's failure leaves the output and says "scorer"). */
    private static boolean taskFailed(ResultRow r) {
        return r.error() != null && r.error().startsWith("task: ");
    }

    /** What {@code f} computed; its failure is the run's, as if it had run in line. */
    private static <T> T await(Future<T> f)
            throws TaskCannotRunException, ServerStoppingException, RunMemory.ExceededException {
        try {
            return f.get();
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new ServerStoppingException();
        } catch (ExecutionException ex) {
            if (ex.getCause() instanceof TaskCannotRunException t) {
                throw t;
            }
            if (ex.getCause() instanceof ServerStoppingException s) {
                throw s;
            }
            if (ex.getCause() instanceof RunMemory.ExceededException m) {
                throw m;
            }
            if (ex.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new IllegalStateException(ex.getCause());
        }
    }

    private Called called(String what, String environment, String versionId) throws TaskCannotRunException {
        VersionRecord v = functions
                .version(versionId)
                .filter(x -> x.environment().equals(environment))
                .orElseThrow(() ->
                        new TaskCannotRunException(what + ": its pinned version " + versionId + " no longer exists"));
        if (v.deletedAt().isPresent()) {
            throw new TaskCannotRunException(what + ": its pinned version " + versionId
                    + " was deleted; create a new evaluation with a live version");
        }
        String name = functions
                .function(v.functionId())
                .map(FunctionStore.FunctionRecord::name)
                .orElse(v.functionId());
        try {
            return new Called(
                    what + " " + name,
                    v,
                    name,
                    new RowPayloads(FunctionWorkers.request(v).getInputArrowSchema()));
        } catch (IllegalArgumentException ex) {
            throw new TaskCannotRunException(what + " " + name + ": " + ex.getMessage());
        }
    }

    /**
     * How far a run under way has got, as the rows whose task and scorers are done; read by
     * {@code GetEvaluationRun}'s callers through {@link #progress(String)}.
     */
    record Progress(long rowsDone, long rows) {}

    /** The rows done of a run, counted as batches finish. */
    private static final class RunProgress {
        private final long rows;
        private final AtomicLong done = new AtomicLong();

        RunProgress(long rows) {
            this.rows = rows;
        }

        Progress now() {
            return new Progress(done.get(), rows);
        }
    }

    /**
     * How far a run this server is executing has got.
     *
     * @return its rows done and total, empty when it is not running here (not started, ended, or before a restart)
     */
    Optional<Progress> progress(String runId) {
        return Optional.ofNullable(progress.get(runId)).map(RunProgress::now);
    }

    /**
     * One run's rows on their way: task batches of {@link #BATCH_ROWS} rows, scored by the built-ins as each answers;
     * the answered rows gathered into batches of {@link #SCORER_BATCH_ROWS} for the function scorers, which are called
     * while the next task batches run. Rows are finished in place in {@code results}, so their order is the dataset's
     * whatever order the batches end in.
     */
    private final class Pipeline {
        private final List<Map<String, @Nullable Object>> rows;
        private final Called task;
        private final List<EvaluationScorer> scorers;
        private final Map<String, Called> scorerFunctions;
        /** The function scorers in the evaluation's order, and for each scorer its index among them (else -1). */
        private final Called[] functions;

        private final int[] functionIndex;
        /** The positions among the scorers of the built-ins, in the order {@link BuiltinRowScoring#score} gives them. */
        private final int[] builtinPositions;

        private final BuiltinRowScoring builtins;
        private final ResultRow[] results;
        private final RunProgress progress;
        /** The result table, appended as rows finish in order. */
        final RunResult result;
        /** What the run holds in the heap: its rows' answers and results are added as they come. */
        private final RunMemory held;
        /**
         * The answered rows waiting for the function scorers, in row order: the row as they read it, and the built-ins'
         * cells. A full batch takes the map and leaves a new one (a copy of 512 entries was a visible part of the
         * pipeline's CPU).
         */
        private Map<Integer, Answered> waiting = new TreeMap<>();

        private final Object waitingLock = new Object();
        /** Scorer batches submitted; the run awaits them all. */
        final Queue<Future<?>> scoring = new ConcurrentLinkedQueue<>();
        /** Bounds the scorer batches in flight, so the task batches cannot outrun them without limit. */
        private final Semaphore scorerSlots = new Semaphore(PARALLEL_BATCHES);

        Pipeline(
                List<Map<String, @Nullable Object>> rows,
                Called task,
                List<EvaluationScorer> scorers,
                Map<String, Called> scorerFunctions,
                BuiltinRowScoring builtins,
                ResultRow[] results,
                RunProgress progress,
                RunResult result,
                RunMemory held) {
            this.rows = rows;
            this.task = task;
            this.scorers = scorers;
            this.scorerFunctions = scorerFunctions;
            this.functions = new Called[scorerFunctions.size()];
            this.functionIndex = new int[scorers.size()];
            List<Integer> builtinAt = new ArrayList<>();
            int f = 0;
            for (int s = 0; s < scorers.size(); s++) {
                Called called = scorerFunctions.get(scorers.get(s).getId());
                functionIndex[s] = called == null ? -1 : f;
                if (called != null) {
                    functions[f++] = called;
                }
                if (scorers.get(s).getSpec().hasBuiltin()) {
                    builtinAt.add(s);
                }
            }
            this.builtinPositions =
                    builtinAt.stream().mapToInt(Integer::intValue).toArray();
            this.builtins = builtins;
            this.results = results;
            this.progress = progress;
            this.result = result;
            this.held = held;
        }

        /** Runs rows {@code [start, end)} through the task and the built-ins; queues them for the function scorers. */
        void taskBatch(int start, int end)
                throws TaskCannotRunException, ServerStoppingException, RunMemory.ExceededException {
            List<Integer> indices = new ArrayList<>(end - start);
            for (int i = start; i < end; i++) {
                indices.add(i);
            }
            Outcome[] outputs = call(task, indices, rows::get, true);
            long bytes = 0;
            for (Outcome o : outputs) {
                bytes += RunMemory.sizeOf(o.error() == null ? o.value() : o.error());
            }
            held.hold(bytes);
            Map<Integer, Answered> answered = new LinkedHashMap<>();
            int failed = 0;
            for (int k = 0; k < indices.size(); k++) {
                int i = indices.get(k);
                Outcome o = outputs[k];
                if (o.error() == null) {
                    AnsweredRow row = new AnsweredRow(rows.get(i), o.value());
                    answered.put(i, new Answered(row, builtinCells(row)));
                } else {
                    results[i] = failedRow(scorers.size(), "task: " + o.error());
                    failed++;
                }
            }
            progress.done.addAndGet(failed);
            if (scorerFunctions.isEmpty()) {
                finish(answered, new Outcome[0][]);
                return;
            }
            Map<Integer, Answered> full = null;
            synchronized (waitingLock) {
                waiting.putAll(answered);
                if (waiting.size() >= SCORER_BATCH_ROWS) {
                    full = waiting;
                    waiting = new TreeMap<>();
                }
            }
            if (full != null) {
                submitScoring(full);
            }
        }

        /** Sends what still waits for the function scorers, once the task batches are done. */
        void flush() throws ServerStoppingException {
            Map<Integer, Answered> rest;
            synchronized (waitingLock) {
                rest = waiting;
                waiting = new TreeMap<>();
            }
            if (!rest.isEmpty()) {
                submitScoring(rest);
            }
        }

        private void submitScoring(Map<Integer, Answered> batch) throws ServerStoppingException {
            try {
                scorerSlots.acquire();
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                throw new ServerStoppingException();
            }
            try {
                scoring.add(executor.submit(() -> {
                    try {
                        scorerBatch(batch);
                    } finally {
                        scorerSlots.release();
                    }
                    result.advance(results);
                    return null;
                }));
            } catch (RuntimeException ex) {
                scorerSlots.release();
                throw ex;
            }
        }

        /** Calls each function scorer on the rows, one call per scorer for the batch, and finishes the rows. */
        private void scorerBatch(Map<Integer, Answered> batch)
                throws TaskCannotRunException, RunMemory.ExceededException {
            List<Integer> indices = List.copyOf(batch.keySet());
            Outcome[][] byFunction = new Outcome[functions.length][];
            for (int f = 0; f < functions.length; f++) {
                byFunction[f] = call(functions[f], indices, i -> batch.get(i).row(), false);
            }
            finish(batch, byFunction);
        }

        /** The built-ins' verdicts on an answered row at their scorers' positions; null at the function scorers'. */
        private @Nullable Cell[] builtinCells(AnsweredRow row) {
            Object output = row.output();
            AnsweredRow builtinRow = row;
            if (output != null
                    && !(output instanceof String || output instanceof Number || output instanceof Boolean)) {
                // built-ins read structured answers as JSON
                builtinRow = new AnsweredRow(row.columns(), RunTables.text(output));
            }
            @Nullable Cell[] cells = new Cell[scorers.size()];
            List<Cell> scored = builtins.score(builtinRow);
            for (int k = 0; k < builtinPositions.length; k++) {
                cells[builtinPositions[k]] = scored.get(k);
            }
            return cells;
        }

        /** Writes the answered rows' results: each scorer's cell in the evaluation's order. */
        private void finish(Map<Integer, Answered> answered, Outcome[][] byFunction)
                throws RunMemory.ExceededException {
            int k = 0; // the row's position in the batch, and so in each function scorer's outcomes
            long bytes = 0;
            for (Map.Entry<Integer, Answered> a : answered.entrySet()) {
                Object output = a.getValue().row().output();
                @Nullable Cell[] cells = a.getValue().builtinCells();
                List<@Nullable Double> scores = new ArrayList<>(scorers.size());
                List<String> metadata = new ArrayList<>(scorers.size());
                List<String> errors = new ArrayList<>(0);
                for (int s = 0; s < scorers.size(); s++) {
                    Cell c = cells[s] != null
                            ? cells[s]
                            : functionCell(scorers.get(s).getId(), byFunction[functionIndex[s]][k]);
                    scores.add(c.score());
                    metadata.add(c.metadata());
                    bytes +=
                            40 + RunMemory.sizeOf(c.metadata()) + (c.error() == null ? 0 : RunMemory.sizeOf(c.error()));
                    if (c.error() != null) {
                        errors.add(c.error());
                    }
                }
                results[a.getKey()] = new ResultRow(
                        output,
                        scores,
                        metadata,
                        errors.isEmpty() ? null : "scorer " + String.join("; scorer ", errors));
                k++;
            }
            held.hold(bytes);
            progress.done.addAndGet(answered.size());
        }
    }

    /** A row the task answered: as the function scorers read it, and the built-ins' verdicts on it (by position). */
    private record Answered(AnsweredRow row, @Nullable Cell[] builtinCells) {}

    /**
     * A dataset row as the scorers read it: its columns, plus {@code output} (the task's answer, in place of a column
     * of that name) and {@code trace} (null here). A view rather than a copy: a copy of every row's map was a visible
     * part of a run's CPU, and the scorers only look values up.
     */
    private static final class AnsweredRow extends java.util.AbstractMap<String, @Nullable Object> {
        private static final String TRACE = "trace";
        private final Map<String, @Nullable Object> columns;
        private final @Nullable Object output;
        private java.util.@Nullable Set<Entry<String, @Nullable Object>> entries;

        AnsweredRow(Map<String, @Nullable Object> columns, @Nullable Object output) {
            this.columns = columns;
            this.output = output;
        }

        Map<String, @Nullable Object> columns() {
            return columns;
        }

        @Nullable
        Object output() {
            return output;
        }

        @Override
        public @Nullable Object get(Object key) {
            if (RunTables.OUTPUT.equals(key)) {
                return output;
            }
            return TRACE.equals(key) ? null : columns.get(key);
        }

        @Override
        public boolean containsKey(Object key) {
            return RunTables.OUTPUT.equals(key) || TRACE.equals(key) || columns.containsKey(key);
        }

        @Override
        public java.util.Set<Entry<String, @Nullable Object>> entrySet() {
            if (entries == null) { // only a failure's message lists a row's columns
                Map<String, @Nullable Object> all = new LinkedHashMap<>(columns);
                all.put(RunTables.OUTPUT, output);
                all.put(TRACE, null);
                entries = java.util.Collections.unmodifiableMap(all).entrySet();
            }
            return entries;
        }
    }

    private static ResultRow failedRow(int scorers, String error) {
        List<@Nullable Double> scores = new ArrayList<>();
        List<String> metadata = new ArrayList<>();
        for (int i = 0; i < scorers; i++) {
            scores.add(null);
            metadata.add("{}");
        }
        return new ResultRow(null, scores, metadata, error);
    }

    /**
     * A function scorer's answer as a cell: a number is the score; an {@code EvaluationScorerResult} ({@code {score,
     * metadata}}, the metadata a JSON object as text) gives both; a list of them scores their mean and keeps each in
     * the metadata's {@code results}.
     */
    private static Cell functionCell(String id, Outcome outcome) {
        if (outcome.error() != null) {
            return new Cell(id, null, "{}", id + ": " + outcome.error());
        }
        Object v = outcome.value();
        try {
            if (v instanceof Number n) {
                return new Cell(id, finite(n.doubleValue()), "{}", null);
            }
            if (v instanceof Map<?, ?> m) {
                Object metadata = metadata(m);
                // most scorers give a score alone: their empty metadata is written without a JSON writer per row
                return new Cell(
                        id,
                        score(m),
                        metadata instanceof Map<?, ?> empty && empty.isEmpty()
                                ? "{}"
                                : JSON.writeValueAsString(metadata),
                        null);
            }
            if (v instanceof List<?> list && !list.isEmpty()) {
                double sum = 0;
                List<Map<String, Object>> each = new ArrayList<>();
                for (Object item : list) {
                    double s;
                    Map<String, Object> entry = new LinkedHashMap<>();
                    if (item instanceof Number n) {
                        s = finite(n.doubleValue());
                    } else if (item instanceof Map<?, ?> m) {
                        s = score(m);
                        entry.put("metadata", metadata(m));
                    } else {
                        throw new IllegalArgumentException("an item of its list is " + describe(item));
                    }
                    entry.put("score", s);
                    each.add(entry);
                    sum += s;
                }
                return new Cell(id, sum / list.size(), JSON.writeValueAsString(Map.of("results", each)), null);
            }
            throw new IllegalArgumentException("it answered " + describe(v));
        } catch (IllegalArgumentException | JsonProcessingException ex) {
            return new Cell(
                    id,
                    null,
                    "{}",
                    id + ": " + ex.getMessage()
                            + "; a scorer returns a number, an EvaluationScorerResult or a non-empty list of them");
        }
    }

    private static double score(Map<?, ?> result) {
        if (!(result.get("score") instanceof Number n)) {
            throw new IllegalArgumentException("its result has no numeric score: " + describe(result));
        }
        return finite(n.doubleValue());
    }

    private static Object metadata(Map<?, ?> result) throws JsonProcessingException {
        Object m = result.get("metadata");
        if (m == null) {
            return Map.of();
        }
        if (m instanceof String s) {
            return s.isBlank() ? Map.of() : JSON.readValue(s, Object.class);
        }
        return m;
    }

    private static double finite(double d) {
        if (!Double.isFinite(d)) {
            throw new IllegalArgumentException("its score is " + d + ", not a finite number");
        }
        return d;
    }

    private static String describe(@Nullable Object v) {
        String s = String.valueOf(v);
        return (s.length() > 200 ? s.substring(0, 200) + "..." : s)
                + (v == null ? "" : " (" + v.getClass().getSimpleName() + ")");
    }

    /**
     * Calls {@code f} on the rows {@code indices} in one batch; when the function fails the batch as a user failure,
     * row by row. Every index gets an outcome, at its position in {@code indices} (arrays in batch order rather than
     * maps by row: a map entry per row and scorer was a visible part of a run's CPU).
     *
     * @param fatal whether a failure other than the function's own (no replica, no such function) means the run
     *              cannot go on; otherwise it is each row's failure
     */
    private Outcome[] call(
            Called f,
            List<Integer> indices,
            java.util.function.IntFunction<Map<String, @Nullable Object>> row,
            boolean fatal)
            throws TaskCannotRunException {
        Outcome[] out = new Outcome[indices.size()];
        List<Integer> sendable = new ArrayList<>(indices.size());
        List<Object[]> arguments = new ArrayList<>(indices.size());
        for (int k = 0; k < indices.size(); k++) {
            try {
                arguments.add(f.payloads().arguments(row.apply(indices.get(k))));
                sendable.add(k);
            } catch (UnfitValueException ex) {
                out[k] = new Outcome(null, ex.getMessage());
            }
        }
        callBatch(f, sendable, arguments, fatal, out);
        return out;
    }

    /** {@link #call}'s batch: {@code positions} are where in {@code out} each of the arguments' outcomes goes. */
    private void callBatch(Called f, List<Integer> positions, List<Object[]> arguments, boolean fatal, Outcome[] out)
            throws TaskCannotRunException {
        if (positions.isEmpty()) {
            return;
        }
        List<@Nullable Object> answers;
        try {
            byte[] answer = calls.call(
                            f.version(),
                            CallFunctionRequest.newBuilder()
                                    .setName(f.name())
                                    .setFeatherStream(
                                            ByteString.copyFrom(f.payloads().encode(arguments)))
                                    .build())
                    .getFeatherStream()
                    .toByteArray();
            answers = RowPayloads.decode(answer, positions.size());
        } catch (StatusRuntimeException ex) {
            ChalkError userFailure =
                    ex.getTrailers() != null && ex.getTrailers().containsKey(FunctionCalls.ERROR)
                            ? ex.getTrailers().get(FunctionCalls.ERROR)
                            : null;
            if (userFailure == null) {
                String why = f.what() + " cannot run: " + ex.getStatus().getCode() + ": "
                        + ex.getStatus().getDescription();
                if (fatal) {
                    throw new TaskCannotRunException(why);
                }
                positions.forEach(i -> out[i] = new Outcome(null, why));
                return;
            }
            if (positions.size() == 1) {
                out[positions.get(0)] = new Outcome(null, message(userFailure, ex));
                return;
            }
            for (int k = 0; k < positions.size(); k++) { // find the rows that fail: each alone
                callBatch(f, List.of(positions.get(k)), List.<Object[]>of(arguments.get(k)), fatal, out);
            }
            return;
        } catch (IllegalArgumentException ex) {
            String why = f.what() + " answered what the server cannot read: " + ex.getMessage();
            positions.forEach(i -> out[i] = new Outcome(null, why));
            return;
        }
        for (int k = 0; k < positions.size(); k++) {
            out[positions.get(k)] = new Outcome(answers.get(k), null);
        }
    }

    private static String message(ChalkError error, StatusRuntimeException ex) {
        String kind = error.hasException() && !error.getException().getKind().isEmpty()
                ? error.getException().getKind() + ": "
                : "";
        String m = error.getMessage().isEmpty() ? String.valueOf(ex.getStatus().getDescription()) : error.getMessage();
        return kind + m;
    }
}
