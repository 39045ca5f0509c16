package ai.chalk.compute.benchmarks;

import java.nio.file.Path;

/** One group of measures of the suite, each recorded with its baseline. */
public interface Benchmark {

    /** Measures, recording into {@code figures}; {@code scratch} is an empty directory of its own. */
    void run(Figures figures, Path scratch) throws Exception;
}
