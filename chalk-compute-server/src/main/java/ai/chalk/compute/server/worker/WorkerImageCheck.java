package ai.chalk.compute.server.worker;

import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.runtime.ExitStatus;
import ai.chalk.compute.server.runtime.ProcessSpec;
import ai.chalk.compute.server.runtime.ProcessStartException;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.SandboxRuntime;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.threads.EnvironmentShares;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Checks, before a function is deployed, that its workers can start: that the worker image is on the runtime (or
 * can be pulled) and runs a {@code java} of at least {@link WorkerJava#MIN_FEATURE}, by running
 * {@code java -version} in a short-lived sandbox of it. Without the check a deployment would succeed and every
 * replica fail later. A success is remembered for {@link #REMEMBERED} (deployments come in bursts: an application
 * deploys all its functions at start), a failure is not (the next deployment checks again, after the image was
 * built). The server's own Java needs no check. The check's sandbox takes a place among the deploying environment's
 * sandboxes, as a replica does: without it, a tenant at its share deploying functions of many images at once started a
 * sandbox per image beyond its share and the server's limit.
 */
public final class WorkerImageCheck {

    private static final Logger log = LoggerFactory.getLogger(WorkerImageCheck.class);
    /** How long a successful check holds. */
    static final Duration REMEMBERED = Duration.ofMinutes(1);
    /** How long {@code java -version} may take. */
    private static final Duration JAVA_TIMEOUT = Duration.ofSeconds(60);

    private static final Pattern VERSION = Pattern.compile("version \"(\\d+)(?:\\.(\\d+))?[^\"]*\"");

    private final SandboxRuntime runtime;
    private final Function<String, EnvironmentShares.Place> places;
    private final WorkerJava java;
    private final Executor executor;
    /** By image: the check in progress, or when it last passed. */
    private final Map<String, CompletableFuture<Optional<String>>> running = new HashMap<>();

    private final Map<String, Long> passedAt = new HashMap<>();

    /**
     * @param places   a place among an environment's sandboxes, taken for the check's sandbox while it runs (a refusal
     *                 is a {@link ComputeException} saying why)
     * @param executor reads the check's output
     */
    public WorkerImageCheck(
            SandboxRuntime runtime,
            Function<String, EnvironmentShares.Place> places,
            WorkerJava java,
            Executor executor) {
        this.runtime = runtime;
        this.places = places;
        this.java = java;
        this.executor = executor;
    }

    /**
     * Why workers of {@code environment} cannot start, or empty when they can. Concurrent callers share one check.
     *
     * @return the problem, naming the image and saying how to provide one
     * @throws ComputeException when a check must run and {@code environment} has no room for its sandbox
     */
    public Optional<String> problem(String environment) {
        return java.image().isEmpty()
                ? Optional.empty()
                : problem(environment, java.image().get());
    }

    /**
     * Why workers of {@code environment} cannot start in the given image (a function's own), or empty when they can.
     * Each image is checked once a minute at the most; concurrent callers share one check, whose sandbox counts among
     * the sandboxes of the environment that started it.
     *
     * @param image the image workers would run in
     * @return the problem, naming the image and saying how to provide one
     * @throws ComputeException when a check must run and {@code environment} has no room for its sandbox
     */
    public Optional<String> problem(String environment, String image) {
        CompletableFuture<Optional<String>> check = recentOrRunning(image);
        if (check != null) {
            return check.join();
        }
        // the place first: a caller refused one never owns a check that others would wait on
        EnvironmentShares.Place place = places.apply(environment);
        boolean mine = false;
        try {
            synchronized (this) {
                check = recentOrRunning(image);
                if (check == null) {
                    check = new CompletableFuture<>();
                    running.put(image, check);
                    mine = true;
                }
            }
            if (mine) {
                return check(image, check);
            }
        } finally {
            place.close();
        }
        return check.join();
    }

    /** A check of {@code image} that passed within {@link #REMEMBERED} (done) or is running; null when neither. */
    private synchronized @Nullable CompletableFuture<Optional<String>> recentOrRunning(String image) {
        Long passed = passedAt.get(image);
        if (passed != null && System.nanoTime() - passed < REMEMBERED.toNanos()) {
            return CompletableFuture.completedFuture(Optional.empty());
        }
        return running.get(image);
    }

    /** Runs the check {@code check} stands for and completes it. */
    private Optional<String> check(String image, CompletableFuture<Optional<String>> check) {
        Optional<String> result = Optional.of("checking the worker image \"" + image + "\" did not finish");
        try {
            result = run(image);
        } catch (RuntimeException e) {
            result = Optional.of("checking the worker image \"" + image + "\" failed: " + e);
        } finally {
            // even after an Error, the next deployment checks again instead of waiting on this one forever
            synchronized (this) {
                running.remove(image);
                if (result.isEmpty()) {
                    // the checks past their time go: each image deployed once stayed, however many there were
                    long now = System.nanoTime();
                    passedAt.values().removeIf(at -> now - at >= REMEMBERED.toNanos());
                    passedAt.put(image, now);
                } else {
                    passedAt.remove(image);
                }
            }
            check.complete(result);
        }
        return result;
    }

    private Optional<String> run(String image) {
        long t0 = System.nanoTime();
        String id = "fnw-check-" + UUID.randomUUID().toString().substring(0, 8);
        RuntimeSandbox sandbox;
        try {
            sandbox = runtime.start(
                    new SandboxSpec(id, image, Map.of(), "/", SandboxSpec.ResourceLimits.NONE, false, List.of()));
        } catch (RuntimeStartException e) {
            return Optional.of("the worker image \"" + image + "\" cannot run on the " + runtime.name() + " runtime: "
                    + e.getMessage() + "; " + java.remedy());
        }
        try {
            RuntimeProcess p;
            try {
                p = sandbox.exec(
                        new ProcessSpec("java", List.of("-version"), Optional.empty(), Map.of(), Optional.empty()));
            } catch (ProcessStartException e) {
                return Optional.of("the worker image \"" + image + "\" has no java on its PATH (" + e.getMessage()
                        + "); " + java.remedy());
            }
            closeQuietly(p);
            CompletableFuture<String> err = read(p.stderr());
            CompletableFuture<String> out = read(p.stdout());
            ExitStatus exit;
            try {
                exit = p.onExit().get(JAVA_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                return Optional.of("java -version in the worker image \"" + image + "\" did not finish within "
                        + JAVA_TIMEOUT.toSeconds() + " s; " + java.remedy());
            } catch (ExecutionException e) {
                return Optional.of("java -version in the worker image \"" + image + "\" failed: " + e.getCause());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return Optional.of("the check of the worker image \"" + image + "\" was interrupted");
            }
            String said = (output(err) + output(out)).trim();
            if (exit.exitCode().orElse(-1) != 0) {
                return Optional.of("java -version in the worker image \"" + image + "\" ended with "
                        + WorkerReplica.describe(exit) + ": " + firstLines(said) + "; " + java.remedy());
            }
            int feature = feature(said);
            if (feature < WorkerJava.MIN_FEATURE) {
                return Optional.of("the worker image \"" + image + "\" runs Java "
                        + (feature < 0 ? "of an unknown" + " version (" + firstLines(said) + ")" : feature)
                        + "; function workers need Java "
                        + WorkerJava.MIN_FEATURE + " or newer; " + java.remedy());
            }
            log.info(
                    "Worker image {} runs Java {} (checked in {} ms)",
                    image,
                    feature,
                    (System.nanoTime() - t0) / 1_000_000);
            return Optional.empty();
        } finally {
            sandbox.terminate(Duration.ZERO);
        }
    }

    /** The feature release in {@code java -version} output ({@code 17} of "17.0.9", {@code 8} of "1.8.0"); -1. */
    static int feature(String versionOutput) {
        Matcher m = VERSION.matcher(versionOutput);
        if (!m.find()) {
            return -1;
        }
        int first = Integer.parseInt(m.group(1));
        return first == 1 && m.group(2) != null ? Integer.parseInt(m.group(2)) : first;
    }

    private CompletableFuture<String> read(InputStream in) {
        return CompletableFuture.supplyAsync(
                () -> {
                    try (in) {
                        return new String(in.readNBytes(8192), StandardCharsets.UTF_8);
                    } catch (IOException e) {
                        return "";
                    }
                },
                executor);
    }

    /** What a reader read; the streams end with the process, so this waits briefly at most. */
    private static String output(CompletableFuture<String> read) {
        try {
            return read.get(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "";
        } catch (ExecutionException | TimeoutException e) {
            return "";
        }
    }

    private static void closeQuietly(RuntimeProcess p) {
        try {
            p.stdin().close();
        } catch (IOException e) {
            // it exited already
        }
    }

    private static String firstLines(String text) {
        List<String> lines = text.lines().limit(3).toList();
        return lines.isEmpty() ? "no output" : String.join(" / ", lines);
    }
}
