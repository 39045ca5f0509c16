/**
 * Chalk SQL from Java: {@link ai.chalk.compute.sql.SQLClient} runs queries over your environment's datasets
 * ({@code chalk.datasets.<name>}), now or as background jobs, and reads or downloads their Parquet results.
 */
@NullMarked
package ai.chalk.compute.sql;

import org.jspecify.annotations.NullMarked;
