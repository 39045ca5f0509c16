package ai.chalk.compute.sample.startup;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;

/**
 * Measures what the starter adds to an application's startup: the same application started in fresh JVMs with Chalk
 * Compute (embedded server), with a remote target (no embedded server) and without the starter, after one discarded
 * warm-up start of each. Two applications: the realistic one ({@code StartupWebApp}: web server, a REST endpoint,
 * three functions and a scorer, actuator) and an empty one ({@link StartupProbe}: auto-configuration only).
 *
 * <p>On a shared machine one start's time swings by a second while the starter adds a tenth of that, so the starts are
 * made in rounds: each round starts every variant once, in an order that cycles through all six, so that a slow
 * stretch of the machine falls on all variants alike; what the starter adds is the difference to the round's start
 * without it (a paired difference). It prints, per variant, the median and interquartile range of
 * {@code SpringApplication.run}, of the startup thread's CPU time (the work the startup does itself, steadier than
 * wall time), of the process's CPU time and resident memory; then, for the paired differences, their median,
 * interquartile range and a distribution-free 95% confidence interval of the median (order statistics of the sign
 * test), and whether that interval shows the aim (at most 150 ms added to the realistic application) met, missed, or
 * neither. It asserts nothing about time. Then one more start of each variant, with its class loading recorded,
 * prints the classes the startup thread loads (and, by package, those the starter adds), its CPU time, and the
 * starter's slowest startup steps (bean creations).
 *
 * <p>System properties: {@code chalk.startup.runs}, the rounds (default 11); {@code chalk.startup.apps}, which
 * applications ({@code web,empty} by default). Its name keeps it out of the default test run (about ten minutes on a
 * busy 2-core machine);
 * run it with {@code ./mvnw -B -pl sample-app test -Dtest=StarterStartupBenchmark}.
 */
class StarterStartupBenchmark {

    /** What the starter may add to the realistic application's {@code SpringApplication.run}, in milliseconds. */
    private static final long AIM_MILLIS = 150;

    private static final List<String> VARIANTS = List.of("without", "with", "remote");

    /** Indexes in a probe's {@code STARTUP} line (after the variant). */
    private static final int RUN = 0;

    private static final int SINCE_JVM = 1;
    private static final int RSS = 2;
    private static final int PROCESS_CPU = 3;
    private static final int STARTUP_THREAD_CPU = 4;
    private static final int STARTER_THREADS_CPU = 5;

    @Test
    void printsTheStartupTimeAddedByTheStarter() throws Exception {
        int runs = Integer.getInteger("chalk.startup.runs", 11);
        for (String app : System.getProperty("chalk.startup.apps", "web,empty").split(",")) {
            measure(app.strip(), runs);
        }
    }

    private static void measure(String app, int runs) throws Exception {
        Map<String, List<long[]>> samples = new LinkedHashMap<>();
        for (String variant : VARIANTS) {
            samples.put(variant, new ArrayList<>());
            start(app, variant); // warm-up: the page cache, the JIT's disk caches
        }
        List<List<String>> orders = orders();
        for (int i = 0; i < runs; i++) {
            for (String variant : orders.get(i % orders.size())) {
                samples.get(variant).add(start(app, variant));
            }
        }
        List<long[]> without = samples.get("without");
        System.out.printf(
                "Startup of the %s application in a fresh JVM, %d rounds (each variant once per round, in rotating"
                        + " order); median [interquartile range]:%n",
                app.equals("web") ? "realistic (web, 3 functions and a scorer, actuator)" : "empty", runs);
        String[] what = {"SpringApplication.run", "startup thread CPU", "process CPU", "resident memory"};
        int[] index = {RUN, STARTUP_THREAD_CPU, PROCESS_CPU, RSS};
        String[] unit = {"ms", "ms", "ms", "MB"};
        for (int k = 0; k < what.length; k++) {
            StringBuilder line = new StringBuilder(String.format("  %-22s", what[k]));
            for (String variant : VARIANTS) {
                long[] values = column(samples.get(variant), index[k], k == 3 ? 1024 : 1);
                line.append(String.format(
                        " %s %d %s [%d-%d];",
                        label(variant),
                        quantile(values, 0.5),
                        unit[k],
                        quantile(values, 0.25),
                        quantile(values, 0.75)));
            }
            System.out.println(line);
        }
        System.out.printf(
                "  CPU time of the starter's threads (chalk-*) by then: embedded server %d ms; remote target %d ms%n",
                quantile(column(samples.get("with"), STARTER_THREADS_CPU, 1), 0.5),
                quantile(column(samples.get("remote"), STARTER_THREADS_CPU, 1), 0.5));
        System.out.println("  what the starter adds, paired by round (start with it minus the round's start without"
                + " it): median [interquartile range] (95% confidence interval of the median)");
        for (String variant : List.of("with", "remote")) {
            for (int k = 0; k < 2; k++) {
                long[] differences = new long[runs];
                for (int i = 0; i < runs; i++) {
                    differences[i] = samples.get(variant).get(i)[index[k]] - without.get(i)[index[k]];
                }
                long[] interval = medianInterval(differences);
                String verdict = "";
                if (k == 0 && app.equals("web")) {
                    verdict = interval[1] <= AIM_MILLIS
                            ? ": at most " + AIM_MILLIS + " ms is shown"
                            : interval[0] > AIM_MILLIS
                                    ? ": more than " + AIM_MILLIS + " ms is shown"
                                    : ": the interval holds " + AIM_MILLIS + " ms, neither shown";
                }
                System.out.printf(
                        "    %-16s %-22s %+d ms [%+d to %+d] (%+d to %+d)%s%n",
                        label(variant),
                        what[k],
                        quantile(differences, 0.5),
                        quantile(differences, 0.25),
                        quantile(differences, 0.75),
                        interval[0],
                        interval[1],
                        verdict);
            }
        }
        for (String variant : VARIANTS) {
            System.out.printf(
                    "  all runs of %s (SpringApplication.run ms / startup thread CPU ms): %s%n",
                    label(variant),
                    samples.get(variant).stream()
                            .map(r -> r[RUN] + "/" + r[STARTUP_THREAD_CPU])
                            .collect(Collectors.joining(" ")));
        }
        diagnose(app);
        assertThat(samples.get("with")).hasSize(runs);
    }

    private static String label(String variant) {
        return switch (variant) {
            case "without" -> "without the starter";
            case "with" -> "embedded server";
            default -> "remote target";
        };
    }

    /** The six orders of the three variants, so that over six rounds each comes first, second and third twice. */
    private static List<List<String>> orders() {
        List<List<String>> orders = new ArrayList<>();
        for (String first : VARIANTS) {
            for (String second : VARIANTS) {
                for (String third : VARIANTS) {
                    if (!first.equals(second) && !first.equals(third) && !second.equals(third)) {
                        orders.add(List.of(first, second, third));
                    }
                }
            }
        }
        return orders;
    }

    private static long[] start(String app, String variant) throws Exception {
        return parse(run(app, variant, List.of()), variant);
    }

    private static long[] parse(List<String> output, String variant) {
        String result = output.stream()
                .filter(line -> line.startsWith("STARTUP " + variant + " "))
                .reduce((a, b) -> b)
                .orElse(null);
        assertThat(result)
                .as("output of the %s start:%n%s", variant, String.join("\n", output))
                .isNotNull();
        String[] parts = result.split(" ");
        long[] values = new long[parts.length - 2];
        for (int i = 2; i < parts.length; i++) {
            values[i - 2] = Long.parseLong(parts[i]);
        }
        return values;
    }

    private static List<String> run(String app, String variant, List<String> jvmOptions) throws Exception {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        List<String> command = new ArrayList<>();
        command.add(java.toString());
        command.addAll(jvmOptions);
        command.addAll(
                List.of("-cp", System.getProperty("java.class.path"), StartupProbe.class.getName(), variant, app));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        List<String> all = new ArrayList<>();
        try (BufferedReader reader =
                new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                all.add(line);
            }
        }
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
        return all;
    }

    /**
     * One more start of each variant with its class loading recorded (JFR's {@code jdk.ClassLoad}, which slows that
     * start, so it is not timed) and Spring's startup steps buffered: prints the classes the startup thread loaded, the
     * packages whose classes the starter adds to it, its CPU time, and the starter's slowest steps. Steadier than any
     * clock on a busy machine, and where the time goes.
     */
    private static void diagnose(String app) throws Exception {
        Path settings = Files.createTempFile("classload", ".jfc");
        Files.writeString(settings, """
                <?xml version="1.0" encoding="UTF-8"?>
                <configuration version="2.0">
                  <event name="jdk.ClassLoad">
                    <setting name="enabled">true</setting>
                    <setting name="stackTrace">false</setting>
                    <setting name="threshold">0 ms</setting>
                  </event>
                </configuration>
                """);
        Map<String, Map<String, Integer>> packagesByVariant = new LinkedHashMap<>();
        for (String variant : List.of("without", "remote", "with")) {
            Path recording = Files.createTempFile("startup-" + variant, ".jfr");
            List<String> output = run(
                    app,
                    variant,
                    List.of(
                            "-XX:StartFlightRecording=dumponexit=true,filename=" + recording + ",settings=" + settings,
                            "-Dchalk.startup.steps=" + (variant.equals("without") ? 0 : 12)));
            long[] values = parse(output, variant);
            Instant startedAt = output.stream()
                    .filter(line -> line.startsWith("STARTED_AT "))
                    .map(line -> Instant.parse(line.substring("STARTED_AT ".length())))
                    .findFirst()
                    .orElseThrow();
            int startupThread = 0;
            int everyThread = 0;
            Map<String, Integer> packages = new HashMap<>();
            for (RecordedEvent event : RecordingFile.readAllEvents(recording)) {
                if (!event.getEventType().getName().equals("jdk.ClassLoad")
                        || event.getEndTime().isAfter(startedAt)) {
                    continue;
                }
                everyThread++;
                RecordedThread thread = event.getThread("eventThread");
                if (thread != null && "main".equals(thread.getJavaName())) {
                    startupThread++;
                    packages.merge(packageOf(event.getClass("loadedClass").getName()), 1, Integer::sum);
                }
            }
            packagesByVariant.put(variant, packages);
            Files.deleteIfExists(recording);
            System.out.printf(
                    "  %-8s startup thread: %d classes loaded (%d by every thread), CPU %d ms%n",
                    variant, startupThread, everyThread, values.length > 4 ? values[4] : -1);
            output.stream().filter(line -> line.startsWith("STEP ")).forEach(line -> System.out.println("    " + line));
            if (!variant.equals("without")) {
                Map<String, Integer> base = packagesByVariant.get("without");
                Map<String, Integer> added = new HashMap<>();
                packages.forEach((name, count) -> {
                    int more = count - base.getOrDefault(name, 0);
                    if (more > 0) {
                        added.put(name, more);
                    }
                });
                System.out.println("    classes the starter adds to the startup thread, by package: "
                        + added.entrySet().stream()
                                .sorted(Map.Entry.<String, Integer>comparingByValue()
                                        .reversed())
                                .limit(15)
                                .map(e -> e.getKey() + " " + e.getValue())
                                .collect(Collectors.joining(", ")));
            }
        }
        Files.deleteIfExists(settings);
    }

    /**
     * The first three segments of a class's package (four under {@code org.springframework} and {@code ai.chalk}), to
     * group by library.
     */
    private static String packageOf(String className) {
        String[] parts = className.split("\\.");
        int keep = Math.min(
                parts.length - 1,
                className.startsWith("org.springframework.") || className.startsWith("ai.chalk.") ? 4 : 3);
        return String.join(".", Arrays.copyOf(parts, Math.max(keep, 1)));
    }

    private static long[] column(List<long[]> samples, int index, long divisor) {
        return samples.stream().mapToLong(s -> s[index] / divisor).toArray();
    }

    /** The quantile {@code q} of the values, interpolated between the two nearest ranks. */
    static long quantile(long[] values, double q) {
        long[] sorted = values.clone();
        Arrays.sort(sorted);
        double rank = q * (sorted.length - 1);
        int below = (int) Math.floor(rank);
        int above = (int) Math.ceil(rank);
        return Math.round(sorted[below] + (rank - below) * (sorted[above] - sorted[below]));
    }

    /**
     * A distribution-free confidence interval of at least 95% for the median of the values: the k-th smallest and
     * k-th largest, with k the largest for which fewer than k values fall below the median with probability at most
     * 2.5% (the sign test's binomial distribution); the whole range when there are too few values for 95%.
     */
    static long[] medianInterval(long[] values) {
        long[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        int k = 0; // values left outside the interval on each side
        double term = Math.pow(0.5, n); // P(Binomial(n, 1/2) = k)
        double atMost = term; // P(Binomial(n, 1/2) <= k): the chance that the median lies below the interval
        while (k < n / 2) {
            double next = term * (n - k) / (k + 1);
            if (atMost + next > 0.025) {
                break;
            }
            atMost += next;
            term = next;
            k++;
        }
        // with atMost above 2.5% (fewer than six values) k is 0: the whole range, the widest interval there is
        return new long[] {sorted[k], sorted[n - 1 - k]};
    }
}
