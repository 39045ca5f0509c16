/**
 * Datasets: named, environment-scoped tables whose immutable revisions are Parquet files in the blob store, uploaded
 * and downloaded through signed HTTP links, and {@code chalk.server.v1.DatasetMetadataService} over them.
 */
@NullMarked
package ai.chalk.compute.server.dataset;

import org.jspecify.annotations.NullMarked;
