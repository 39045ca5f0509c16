/**
 * Datasets: named tables of the client's environment whose immutable revisions are Parquet files on the server,
 * uploaded from CSV, Parquet, rows, columns or Arrow and downloaded as Parquet, through
 * {@code chalk.server.v1.DatasetMetadataService} and the server's signed HTTP links.
 */
@NullMarked
package ai.chalk.compute.dataset;

import org.jspecify.annotations.NullMarked;
