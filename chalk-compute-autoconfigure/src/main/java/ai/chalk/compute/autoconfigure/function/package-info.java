/**
 * Functions in a Spring application: discovery of {@code @ChalkFunction}, {@code @ChalkScorer} and
 * {@code @ChalkClass} beans at startup, their state, and the worker mode that serves them in a replica.
 */
package ai.chalk.compute.autoconfigure.function;
