package ai.chalk.compute.benchmarks;

import ai.chalk.compute.benchmark.SandboxLatencyBenchmark;
import ai.chalk.compute.evaluation.EvaluationBenchmark;
import ai.chalk.compute.function.remote.FunctionCallBenchmark;
import ai.chalk.compute.server.runtime.local.IdleSandboxesBenchmark;
import ai.chalk.compute.server.runtime.local.LocalRuntimeBenchmark;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * Runs the benchmarks, prints each figure with its baseline and ratio, and writes them all as JSON under
 * {@code target/benchmark-figures} (the path is printed last). Arguments: {@code smoke} for a short run (few rounds:
 * shows the suite works, its figures are not for comparing), benchmark names to run only those, and {@code name=value}
 * settings a benchmark reads (IdleSandboxesBenchmark's {@code sandboxes=N}).
 */
public final class BenchmarkSuite {

    private static final Map<String, Supplier<Benchmark>> BENCHMARKS = new LinkedHashMap<>();

    static {
        BENCHMARKS.put("LocalRuntimeBenchmark", LocalRuntimeBenchmark::new);
        BENCHMARKS.put("SandboxLatencyBenchmark", SandboxLatencyBenchmark::new);
        BENCHMARKS.put("FunctionCallBenchmark", FunctionCallBenchmark::new);
        BENCHMARKS.put("EvaluationBenchmark", EvaluationBenchmark::new);
        BENCHMARKS.put("IdleSandboxesBenchmark", IdleSandboxesBenchmark::new);
    }

    private BenchmarkSuite() {}

    /** Runs the suite; exits non-zero when a benchmark fails (its figures so far are still written). */
    public static void main(String[] args) throws Exception {
        List<String> argList = Arrays.asList(args);
        boolean smoke = argList.contains("smoke");
        List<String> only = argList.stream()
                .filter(a -> !a.equals("smoke") && !a.contains("="))
                .toList();
        Map<String, String> options = new LinkedHashMap<>();
        argList.stream()
                .filter(a -> a.contains("="))
                .forEach(a -> options.put(a.substring(0, a.indexOf('=')), a.substring(a.indexOf('=') + 1)));
        for (String name : only) {
            if (!BENCHMARKS.containsKey(name)) {
                System.err.println("no benchmark named " + name + "; there are " + BENCHMARKS.keySet());
                System.exit(2);
            }
        }
        Figures figures = new Figures(smoke, options);
        System.out.printf(
                "%d cores, load average %.2f, %s run%n",
                Runtime.getRuntime().availableProcessors(),
                java.lang.management.ManagementFactory.getOperatingSystemMXBean()
                        .getSystemLoadAverage(),
                smoke ? "smoke" : "full");
        boolean failed = false;
        for (Map.Entry<String, Supplier<Benchmark>> b : BENCHMARKS.entrySet()) {
            if (!only.isEmpty() && !only.contains(b.getKey())) {
                continue;
            }
            System.out.println("== " + b.getKey());
            Path scratch = Files.createTempDirectory("chalk-bench-");
            try {
                b.getValue().get().run(figures, scratch);
            } catch (Exception | AssertionError e) {
                failed = true;
                System.err.println(b.getKey() + " failed: " + e);
                e.printStackTrace();
            } finally {
                delete(scratch);
            }
        }
        Path file = figures.write(Path.of("target", "benchmark-figures"), commit());
        System.out.println("figures: " + file.toAbsolutePath());
        System.exit(failed ? 1 : 0); // the servers' non-daemon threads must not keep the suite alive
    }

    private static String commit() {
        try {
            Process p = new ProcessBuilder("git", "rev-parse", "--short", "HEAD")
                    .redirectErrorStream(true)
                    .start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            return p.waitFor() == 0 && out.matches("[0-9a-f]+") ? out : "unknown";
        } catch (IOException e) {
            return "unknown";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "unknown";
        }
    }

    private static void delete(Path dir) throws IOException {
        try (Stream<Path> all = Files.walk(dir)) {
            for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException | java.io.UncheckedIOException e) {
            System.err.println("could not delete " + dir + ": " + e.getMessage());
        }
    }
}
