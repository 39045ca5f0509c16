/**
 * Content-addressed blobs on disk (function code, later dataset files) and the BlobService that uploads only
 * what the server lacks.
 */
package ai.chalk.compute.server.blob;
