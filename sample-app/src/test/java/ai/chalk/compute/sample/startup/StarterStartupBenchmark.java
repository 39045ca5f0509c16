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
 * Measures what the starter adds to an application's startup: the same application started in fresh JVMs, alternately
 * with Chalk Compute (embedded server), with a remote target (no embedded server) and without the starter, after one
 * discarded warm-up start of each. Two applications: the realistic one ({@code StartupWebApp}: web server, a REST
 * endpoint, three functions and a scorer, actuator) and an empty one ({@link StartupProbe}: auto-configuration only).
 * Prints the medians of {@code SpringApplication.run}, of the time since the JVM started, of resident memory and of
 * the CPU time the process used by then (steadier than wall time on a busy machine), with
 * what the starter adds and the ratio; it asserts nothing about time (the aim is at most 150 ms added to the
 * realistic application). Then one more start of each variant, with its class loading recorded, prints what is
 * steady on a busy machine: the classes the startup thread loads (and, by package, those the starter adds), its CPU
 * time, and the starter's slowest startup steps (bean creations). Runs per variant: system property {@code chalk.startup.runs} (default 5). Its name keeps it
 * out of the default test run (about a minute); run it with
 * {@code ./mvnw -B -pl sample-app test -Dtest=StarterStartupBenchmark}, on a quiet machine: on two busy cores the
 * figures swing by hundreds of milliseconds.
 */
class StarterStartupBenchmark {

    @Test
    void printsTheStartupTimeAddedByTheStarter() throws Exception {
        int runs = Integer.getInteger("chalk.startup.runs", 5);
        for (String app : List.of("web", "empty")) {
            measure(app, runs);
        }
    }

    private static void measure(String app, int runs) throws Exception {
        List<long[]> with = new ArrayList<>();
        List<long[]> remote = new ArrayList<>();
        List<long[]> without = new ArrayList<>();
        start(app, "with");
        start(app, "without");
        for (int i = 0; i < runs; i++) {
            // rotate which variant goes first, so none always follows another
            if (i % 2 == 0) {
                with.add(start(app, "with"));
                without.add(start(app, "without"));
                remote.add(start(app, "remote"));
            } else {
                remote.add(start(app, "remote"));
                without.add(start(app, "without"));
                with.add(start(app, "with"));
            }
        }
        System.out.printf(
                "Startup of the %s application in a fresh JVM, median of %d runs each:%n",
                app.equals("web") ? "realistic (web, 3 functions and a scorer, actuator)" : "empty", runs);
        String[] what = {"SpringApplication.run", "since JVM start", "resident memory", "CPU time"};
        String[] unit = {"ms", "ms", "MB", "ms"};
        for (int k = 0; k < 4; k++) {
            long base = median(without, k) / (k == 2 ? 1024 : 1);
            long embedded = median(with, k) / (k == 2 ? 1024 : 1);
            long remoteOnly = median(remote, k) / (k == 2 ? 1024 : 1);
            System.out.printf(
                    "  %-22s without the starter %d %s; embedded server %d %s: +%d, ratio %.2f;"
                            + " remote target %d %s: +%d, ratio %.2f%n",
                    what[k],
                    base,
                    unit[k],
                    embedded,
                    unit[k],
                    embedded - base,
                    (double) embedded / base,
                    remoteOnly,
                    unit[k],
                    remoteOnly - base,
                    (double) remoteOnly / base);
        }
        System.out.printf(
                "  all runs (SpringApplication.run ms): without %s, embedded %s, remote %s%n",
                without.stream().map(r -> r[0]).toList(),
                with.stream().map(r -> r[0]).toList(),
                remote.stream().map(r -> r[0]).toList());
        System.out.printf(
                "  median startup thread CPU time: without %d ms; embedded server %d ms: +%d; remote target %d ms:"
                        + " +%d%n",
                median(without, 4),
                median(with, 4),
                median(with, 4) - median(without, 4),
                median(remote, 4),
                median(remote, 4) - median(without, 4));
        System.out.printf(
                "  median CPU time of the starter's threads (chalk-*) by then: embedded server %d ms; remote target"
                        + " %d ms%n",
                median(with, 5), median(remote, 5));
        diagnose(app);
        assertThat(with).hasSize(runs);
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

    private static long median(List<long[]> samples, int index) {
        List<Long> values =
                new ArrayList<>(samples.stream().map(s -> s[index]).sorted().toList());
        int n = values.size();
        return n % 2 == 1 ? values.get(n / 2) : (values.get(n / 2 - 1) + values.get(n / 2)) / 2;
    }
}
