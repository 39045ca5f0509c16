/**
 * Content-addressed blobs on disk (function code, later dataset files), kept once whoever uploaded them, and the
 * BlobService that uploads only what the caller's environment lacks and shows each environment only its own.
 */
@NullMarked
package ai.chalk.compute.server.blob;

import org.jspecify.annotations.NullMarked;
