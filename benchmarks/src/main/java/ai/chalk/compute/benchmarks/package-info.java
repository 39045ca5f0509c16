/**
 * The benchmark suite: each figure printed and written as JSON next to a baseline measured in the same run.
 * Plain programs, never part of {@code mvn verify}; timings are reported, never asserted.
 */
package ai.chalk.compute.benchmarks;
