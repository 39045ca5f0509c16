package ai.chalk.compute.benchmarks;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * The figures of one run: each printed as it is recorded (ours, the baseline, the ratio), then all of them written as
 * JSON so runs can be compared across commits.
 */
public final class Figures {

    private final List<Figure> figures = new ArrayList<>();
    private final boolean smoke;
    private final Map<String, String> options;

    /** Figures of a run; a smoke run measures few rounds, to show the suite works, not to compare. */
    public Figures(boolean smoke) {
        this(smoke, Map.of());
    }

    /** As above, with the run's {@code name=value} arguments, which benchmarks read with {@link #option}. */
    public Figures(boolean smoke, Map<String, String> options) {
        this.smoke = smoke;
        this.options = Map.copyOf(options);
    }

    /**
     * The whole number given as {@code name=value} on the suite's command line, else {@code fallback}.
     *
     * @throws IllegalArgumentException when it is there but not a positive number
     */
    public int option(String name, int fallback) {
        String v = options.get(name);
        if (v == null) {
            return fallback;
        }
        try {
            int n = Integer.parseInt(v.strip());
            if (n > 0) {
                return n;
            }
        } catch (NumberFormatException e) {
            // refused below
        }
        throw new IllegalArgumentException(name + "=" + v + ": a positive whole number is wanted");
    }

    /**
     * Whether the run's {@code skip=a,b} argument names {@code part}: a benchmark leaves that part out, so a session
     * iterating on one figure does not wait for the others (the suite's default runs every part).
     */
    public boolean skips(String part) {
        String v = options.get("skip");
        return v != null && Arrays.asList(v.split(",")).contains(part);
    }

    /** Whether this is a short smoke run: benchmarks measure fewer rounds. */
    public boolean smoke() {
        return smoke;
    }

    /** {@code full} rounds, or a tenth of them (at least 3) in a smoke run. */
    public int rounds(int full) {
        return smoke ? Math.max(3, full / 10) : full;
    }

    /** Records a latency: medians and our 95th percentile of durations in nanoseconds. */
    public void latency(String name, long[] ours, String baselineName, long[] baseline) {
        add(new Figure(
                name,
                "ms",
                Samples.medianMillis(ours),
                Samples.percentileMillis(ours, 95),
                baselineName,
                Samples.medianMillis(baseline)));
    }

    /** Records a figure with no percentiles (a rate, a size). */
    public void value(String name, String unit, double ours, String baselineName, double baseline) {
        add(new Figure(name, unit, ours, ours, baselineName, baseline));
    }

    /** Records a figure and prints it. */
    public synchronized void add(Figure f) {
        figures.add(f);
        System.out.printf(
                "%-52s %10.3f %-7s | %-44s %10.3f | %6.2fx%n",
                f.name(), f.ours(), f.unit(), "baseline: " + f.baselineName(), f.baseline(), f.ratio());
    }

    /** What has been recorded so far. */
    public synchronized List<Figure> all() {
        return List.copyOf(figures);
    }

    /** Writes the figures as JSON into {@code dir}, named after the time and commit, and returns the file. */
    public synchronized Path write(Path dir, String commit) throws IOException {
        ObjectMapper json = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        ObjectNode root = json.createObjectNode();
        Instant now = Instant.now();
        root.put("commit", commit);
        root.put("time", now.toString());
        root.put("smoke", smoke);
        root.put("cores", Runtime.getRuntime().availableProcessors());
        root.put("loadAverage", ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
        root.put("java", System.getProperty("java.version"));
        ArrayNode list = root.putArray("figures");
        for (Figure f : figures) {
            ObjectNode o = list.addObject();
            o.put("name", f.name());
            o.put("unit", f.unit());
            o.put("ours", f.ours());
            o.put("p95", f.p95());
            o.put("baseline", f.baseline());
            o.put("baselineName", f.baselineName());
            o.put("ratio", f.ratio());
        }
        Files.createDirectories(dir);
        Path file = dir.resolve(now.toString().replace(':', '-') + "-" + commit + ".json");
        json.writeValue(file.toFile(), root);
        return file;
    }
}
