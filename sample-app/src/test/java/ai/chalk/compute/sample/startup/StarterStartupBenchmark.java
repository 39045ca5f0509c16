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
 * Measures what the starter adds to an application's startup: the same application
 * ({@link StartupProbe}) started in fresh JVMs, alternately with and without Chalk Compute (embedded
 * server included), after one discarded warm-up start of each. Prints the medians and their ratio;
 * it asserts nothing about time (the aim is at most 150 ms added). Runs per variant: system property
 * {@code chalk.startup.runs} (default 5). Its name keeps it out of the default test run (about 30 s);
 * run it with {@code ./mvnw -B -pl sample-app test -Dtest=StarterStartupBenchmark}. Run it on a quiet
 * machine: on two busy cores the figures swing by hundreds of milliseconds.
 */
class StarterStartupBenchmark {

    @Test
    void printsTheStartupTimeAddedByTheStarter() throws Exception {
        int runs = Integer.getInteger("chalk.startup.runs", 5);
        List<long[]> with = new ArrayList<>();
        List<long[]> remote = new ArrayList<>();
        List<long[]> without = new ArrayList<>();
        start("with");
        start("without");
        for (int i = 0; i < runs; i++) {
            // rotate which variant goes first, so none always follows another
            if (i % 2 == 0) {
                with.add(start("with"));
                without.add(start("without"));
                remote.add(start("remote"));
            } else {
                remote.add(start("remote"));
                without.add(start("without"));
                with.add(start("with"));
            }
        }
        long withRun = median(with, 0);
        long withoutRun = median(without, 0);
        long withUptime = median(with, 1);
        long withoutUptime = median(without, 1);
        System.out.printf("Startup of the same application in a fresh JVM, median of %d runs each:%n", runs);
        System.out.printf(
                "  SpringApplication.run: without the starter %d ms, with it (embedded server) %d ms:"
                        + " +%d ms, ratio %.2f%n",
                withoutRun, withRun, withRun - withoutRun, (double) withRun / withoutRun);
        System.out.printf(
                "  since JVM start:       without the starter %d ms, with it (embedded server) %d ms:"
                        + " +%d ms, ratio %.2f%n",
                withoutUptime, withUptime, withUptime - withoutUptime, (double) withUptime / withoutUptime);
        long remoteRun = median(remote, 0);
        System.out.printf(
                "  of which the starter without the embedded server (remote target): %d ms: +%d ms%n",
                remoteRun, remoteRun - withoutRun);
        System.out.printf(
                "  fastest run:           without the starter %d ms, with it %d ms: +%d ms%n",
                min(without, 0), min(with, 0), min(with, 0) - min(without, 0));
        System.out.printf(
                "  all runs (SpringApplication.run ms): without %s, with %s, remote %s%n",
                without.stream().map(r -> r[0]).toList(),
                with.stream().map(r -> r[0]).toList(),
                remote.stream().map(r -> r[0]).toList());
        assertThat(with).hasSize(runs);
    }

    private static long[] start(String variant) throws Exception {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process process = new ProcessBuilder(
                        java.toString(),
                        "-cp",
                        System.getProperty("java.class.path"),
                        StartupProbe.class.getName(),
                        variant)
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
        return new long[] {Long.parseLong(parts[2]), Long.parseLong(parts[3])};
    }

    private static long min(List<long[]> samples, int index) {
        return samples.stream().mapToLong(s -> s[index]).min().orElseThrow();
    }

    private static long median(List<long[]> samples, int index) {
        List<Long> values =
                new ArrayList<>(samples.stream().map(s -> s[index]).sorted().toList());
        int n = values.size();
        return n % 2 == 1 ? values.get(n / 2) : (values.get(n / 2 - 1) + values.get(n / 2)) / 2;
    }
}
