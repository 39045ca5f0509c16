package ai.chalk.compute.sample.startup;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Measures what the starter adds to an application's startup: the same application started in fresh JVMs, alternately
 * with Chalk Compute (embedded server), with a remote target (no embedded server) and without the starter, after one
 * discarded warm-up start of each. Two applications: the realistic one ({@code StartupWebApp}: web server, a REST
 * endpoint, three functions and a scorer, actuator) and an empty one ({@link StartupProbe}: auto-configuration only).
 * Prints the medians of {@code SpringApplication.run}, of the time since the JVM started, of resident memory and of
 * the CPU time the process used by then (steadier than wall time on a busy machine), with
 * what the starter adds and the ratio; it asserts nothing about time (the aim is at most 150 ms added to the
 * realistic application). Runs per variant: system property {@code chalk.startup.runs} (default 5). Its name keeps it
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
        assertThat(with).hasSize(runs);
    }

    private static long[] start(String app, String variant) throws Exception {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process process = new ProcessBuilder(
                        java.toString(),
                        "-cp",
                        System.getProperty("java.class.path"),
                        StartupProbe.class.getName(),
                        variant,
                        app)
                .redirectErrorStream(true)
                .start();
        String result = null;
        StringBuilder all = new StringBuilder();
        try (BufferedReader reader =
                new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                all.append(line).append('\n');
                if (line.startsWith("STARTUP " + variant + " ")) {
                    result = line;
                }
            }
        }
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(result).as("output of the %s start:%n%s", variant, all).isNotNull();
        String[] parts = result.split(" ");
        return new long[] {
            Long.parseLong(parts[2]), Long.parseLong(parts[3]), Long.parseLong(parts[4]), Long.parseLong(parts[5])
        };
    }

    private static long median(List<long[]> samples, int index) {
        List<Long> values =
                new ArrayList<>(samples.stream().map(s -> s[index]).sorted().toList());
        int n = values.size();
        return n % 2 == 1 ? values.get(n / 2) : (values.get(n / 2 - 1) + values.get(n / 2)) / 2;
    }
}
