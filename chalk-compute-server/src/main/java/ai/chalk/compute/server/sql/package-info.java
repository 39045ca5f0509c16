/**
 * Chalk SQL: an environment's datasets queried with embedded DuckDB, each query in its own in-memory database that can
 * read the caller's dataset files and nothing else, and the SqlService that runs, plans, polls and lists them.
 */
@NullMarked
package ai.chalk.compute.server.sql;

import org.jspecify.annotations.NullMarked;
