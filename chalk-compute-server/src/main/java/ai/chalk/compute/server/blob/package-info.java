/**
 * Content-addressed blobs on disk (function code, later dataset files) and the BlobService that uploads only
 * what the server lacks.
 */
@NullMarked
package ai.chalk.compute.server.blob;

import org.jspecify.annotations.NullMarked;
