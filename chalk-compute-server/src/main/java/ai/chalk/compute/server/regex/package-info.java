/**
 * Regular expressions written by tenants (scorers' patterns, network policies' matches), run with a deadline: Java's
 * matcher has none, and a pattern that backtracks catastrophically would hold its thread for good.
 */
package ai.chalk.compute.server.regex;
