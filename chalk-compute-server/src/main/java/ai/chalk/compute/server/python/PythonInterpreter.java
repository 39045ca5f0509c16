package ai.chalk.compute.server.python;

import ai.chalk.compute.proto.sandbox.v1.PythonExecutionCompleted;
import ai.chalk.compute.proto.sandbox.v1.PythonExecutionOutcome;
import ai.chalk.compute.proto.sandbox.v1.SkippedArtifact;
import ai.chalk.compute.server.exec.EnvironmentBytes;
import ai.chalk.compute.server.exec.ProcessThreads;
import ai.chalk.compute.server.runtime.ExitStatus;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import io.grpc.Status;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The persistent Python interpreter of one sandbox: a driver started on first use and kept between calls, so that a
 * snippet sees what earlier ones defined. Snippets run one at a time, in the order their calls came. An interpreter
 * that ended (the snippet called {@code sys.exit}, crashed it, was killed after a stop, or broke the protocol) is
 * replaced by a fresh one on the next call. Closed with its sandbox.
 */
final class PythonInterpreter implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(PythonInterpreter.class);
    /** Skipped artifacts reported at most per execution; the rest are counted in one more entry. */
    static final int MAX_SKIPPED = 100;

    private final String sandboxId;
    private final RuntimeSandbox sandbox;
    private final ProcessThreads threads;
    private final EnvironmentBytes.Account artifactBudget;
    private final Semaphore turn = new Semaphore(1, true);
    /** Guarded by {@link #turn}. */
    private @Nullable PythonDriver driver;

    private int cells;
    private volatile boolean closed;
    private volatile @Nullable PythonDriver current;

    PythonInterpreter(
            String sandboxId, RuntimeSandbox sandbox, ProcessThreads threads, EnvironmentBytes.Account artifactBudget) {
        this.sandboxId = sandboxId;
        this.sandbox = sandbox;
        this.threads = threads;
        this.artifactBudget = artifactBudget;
    }

    /** Runs {@code execution} once the snippets before it are done; blocks the calling thread until it completes. */
    void run(PythonExecution execution) {
        try {
            while (!turn.tryAcquire(200, TimeUnit.MILLISECONDS)) {
                // a client gone, or a call the server failed (a second spec): nothing waits for this snippet
                if (execution.call().gone() || execution.call().answered()) {
                    return;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        try {
            runInTurn(execution);
        } finally {
            execution.finished();
            turn.release();
        }
    }

    private void runInTurn(PythonExecution execution) {
        PythonCall call = execution.call();
        if (closed) {
            call.fail(Status.FAILED_PRECONDITION.withDescription("sandbox " + sandboxId + " has ended"));
            return;
        }
        if (execution.stopped() != PythonExecution.Stop.NONE) {
            call.completed(completed(
                    execution,
                    PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_INTERRUPTED,
                    0,
                    "stopped before it started; nothing ran",
                    List.of()));
            return;
        }
        PythonDriver d = driver;
        if (d == null) {
            try {
                d = PythonDriver.start(sandbox, threads.pumps(), artifactBudget);
            } catch (DriverStartException e) {
                call.fail(Status.FAILED_PRECONDITION.withDescription(e.getMessage()));
                return;
            }
            driver = d;
            current = d;
            if (closed) {
                d.kill();
            }
        }
        PythonRequest request = execution.request();
        Map<String, Object> command = new LinkedHashMap<>();
        command.put("id", execution.id());
        command.put("number", ++cells);
        command.put("code", request.source());
        command.put("env", request.env());
        request.workdir().ifPresent(w -> command.put("workdir", w));
        command.put("capture_charts", request.captureCharts());
        command.put("max_artifact_bytes", Math.min(request.artifactLimit(), DriverFrames.MAX_ARTIFACT_BYTES));
        Ending ending = drive(d, execution, command);
        if (ending.interpreterEnded()) {
            d.release();
            driver = null;
            current = null;
        }
        call.completed(ending.completed());
    }

    /** What ended an execution, and whether the interpreter went with it. */
    private record Ending(PythonExecutionCompleted completed, boolean interpreterEnded) {}

    private Ending drive(PythonDriver d, PythonExecution execution, Map<String, Object> command) {
        PythonCall call = execution.call();
        List<SkippedArtifact> skipped = new ArrayList<>();
        int[] skippedBeyond = {0};
        DriverEvent.CodeError error = null;
        int seq = 0;
        String broken = null;
        DriverEvent.Done done = null;
        try {
            // the timeout starts before the command is written: a snippet that replaced the driver's reading of
            // commands left a large one's write blocked on a full pipe, with no timeout running and a cancel only
            // noted, holding a thread and the sandbox's turn until the sandbox ended
            execution.running(d);
            d.send(command);
            while (true) {
                DriverEvent event = d.next(execution.request().artifactLimit());
                if (event == null) {
                    break;
                }
                if (event instanceof DriverEvent.Output o) {
                    call.output(o.stderr(), o.data());
                } else if (event instanceof DriverEvent.Artifact a) {
                    try {
                        call.artifact(PythonArtifacts.of(sandboxId, execution.id(), ++seq, a));
                    } finally {
                        artifactBudget.release(a.reserved());
                    }
                } else if (event instanceof DriverEvent.Skipped s) {
                    skip(skipped, skippedBeyond, s);
                } else if (event instanceof DriverEvent.CodeError e) {
                    error = e;
                } else if (event instanceof DriverEvent.Done c
                        && c.executionId().equals(execution.id())) {
                    done = c;
                }
                // a Ready, or a Done of another execution, is a snippet writing on the protocol: it only fools itself
                if (done != null) {
                    break;
                }
            }
        } catch (DriverProtocolException e) {
            broken = e.getMessage();
        } catch (IOException e) {
            log.debug("Reading the Python driver of sandbox {} failed: {}", sandboxId, e.toString());
        }
        execution.finished();
        if (skippedBeyond[0] > 0) {
            skipped.add(SkippedArtifact.newBuilder()
                    .setName("(" + skippedBeyond[0] + " more)")
                    .setReason("more than " + MAX_SKIPPED + " artifacts were skipped")
                    .build());
        }
        if (error != null) {
            call.artifact(PythonArtifacts.error(sandboxId, execution.id(), ++seq, error));
        }
        if (done != null && !done.status().equals("exit")) {
            return new Ending(finishedSnippet(execution, done, error, skipped), false);
        }
        // the interpreter ended (or must): sys.exit, a crash, a kill after a stop, or output we cannot trust
        if (done == null) {
            d.kill();
        }
        Optional<ExitStatus> status = d.exit(Duration.ofSeconds(5));
        if (status.isEmpty()) {
            d.kill();
            status = d.exit(Duration.ofSeconds(5));
        }
        int code = status.map(PythonInterpreter::exitCode).orElse(137);
        String fresh = "; the next call starts a fresh interpreter";
        if (done != null) {
            return new Ending(
                    completed(
                            execution,
                            code == 0
                                    ? PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_SUCCEEDED
                                    : PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_FAILED,
                            code,
                            code == 0 ? "" : "SystemExit: " + code + ": the snippet ended the interpreter" + fresh,
                            skipped),
                    true);
        }
        if (broken != null) {
            return new Ending(
                    completed(
                            execution,
                            PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_FAILED,
                            code,
                            "the interpreter's output broke the driver protocol (" + broken
                                    + "); it was stopped and its state is lost" + fresh,
                            skipped),
                    true);
        }
        if (execution.killed()) {
            boolean timedOut = execution.stopped() == PythonExecution.Stop.TIMEOUT;
            return new Ending(
                    completed(
                            execution,
                            timedOut
                                    ? PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_TIMED_OUT
                                    : PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_INTERRUPTED,
                            code,
                            (timedOut ? timeoutText(execution) : "interrupted")
                                    + ", and the snippet did not stop within " + PythonExecution.GRACE.toSeconds()
                                    + "s of the KeyboardInterrupt: the interpreter was killed and its state is lost"
                                    + fresh,
                            skipped),
                    true);
        }
        String how = status.map(s -> s.signal().isPresent()
                        ? "was killed by signal " + s.signal().getAsInt()
                        : "exited with code " + s.exitCode().orElse(-1))
                .orElse("stopped answering");
        return new Ending(
                completed(
                        execution,
                        PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_FAILED,
                        code,
                        (closed ? "the sandbox ended: the interpreter " : "the interpreter ") + how
                                + " before the snippet finished" + fresh,
                        skipped),
                true);
    }

    private static String timeoutText(PythonExecution execution) {
        return "timed out after "
                + execution.request().timeout().map(Duration::toSeconds).orElse(0L) + "s";
    }

    private PythonExecutionCompleted finishedSnippet(
            PythonExecution execution,
            DriverEvent.Done done,
            DriverEvent.@Nullable CodeError error,
            List<SkippedArtifact> skipped) {
        String traceback = error == null ? "" : error.traceback();
        return switch (done.status()) {
            case "ok" ->
                completed(execution, PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_SUCCEEDED, 0, "", skipped);
            case "interrupted" ->
                switch (execution.stopped()) {
                    case TIMEOUT ->
                        completed(
                                execution,
                                PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_TIMED_OUT,
                                0,
                                timeoutText(execution)
                                        + ": KeyboardInterrupt raised in the snippet; the interpreter keeps"
                                        + " its state\n" + traceback,
                                skipped);
                    case INTERRUPT ->
                        completed(
                                execution,
                                PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_INTERRUPTED,
                                0,
                                traceback,
                                skipped);
                    case NONE ->
                        completed(
                                execution,
                                PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_FAILED,
                                0,
                                traceback,
                                skipped);
                };
            default ->
                completed(
                        execution,
                        PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_FAILED,
                        0,
                        traceback.isEmpty() ? "the snippet failed" : traceback,
                        skipped);
        };
    }

    private static void skip(List<SkippedArtifact> skipped, int[] beyond, DriverEvent.Skipped s) {
        if (skipped.size() >= MAX_SKIPPED) {
            beyond[0]++;
            return;
        }
        skipped.add(SkippedArtifact.newBuilder()
                .setName(s.name())
                .setReason(s.reason())
                .setByteSize(s.size())
                .build());
    }

    private static PythonExecutionCompleted completed(
            PythonExecution execution,
            PythonExecutionOutcome outcome,
            int exitCode,
            String message,
            List<SkippedArtifact> skipped) {
        return PythonExecutionCompleted.newBuilder()
                .setOutcome(outcome)
                .setExitCode(exitCode)
                .setErrorMessage(message)
                .addAllSkippedArtifacts(skipped)
                .build();
    }

    private static int exitCode(ExitStatus s) {
        return s.exitCode().orElseGet(() -> 128 + s.signal().orElse(9));
    }

    /** Kills the interpreter: its sandbox has ended. A snippet running now completes as FAILED. */
    @Override
    public void close() {
        closed = true;
        PythonDriver d = current;
        if (d != null) {
            d.kill();
            // once it is gone (a snippet running now reads its last frames first)
            d.onExit().whenComplete((s, e) -> d.release());
        }
    }
}
