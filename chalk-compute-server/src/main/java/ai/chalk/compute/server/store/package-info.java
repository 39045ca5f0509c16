/**
 * Server state that must survive a restart, in an embedded H2 database file under the data directory.
 * Each store owns its tables and creates them on first use.
 */
package ai.chalk.compute.server.store;
