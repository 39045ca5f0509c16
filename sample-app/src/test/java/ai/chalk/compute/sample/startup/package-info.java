/**
 * Startup cost of the starter: the same application started with and without Chalk Compute's
 * auto-configuration (embedded server included), each in a fresh JVM.
 */
package ai.chalk.compute.sample.startup;
