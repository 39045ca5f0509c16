/**
 * Server state that must survive a restart, in an embedded H2 database file under the data directory.
 * Each store owns its tables and creates them on first use; the database reopens itself after a failed
 * write and says while it cannot write, so a full disk degrades the server instead of bricking it.
 * Every row of a resource records the environment it belongs to; tables from before environments gain the
 * column in place, their rows in {@code default}.
 */
@NullMarked
package ai.chalk.compute.server.store;

import org.jspecify.annotations.NullMarked;
