/**
 * Function workers: code snapshots materialised from blobs, replicas running the worker in sandboxes (on the
 * server's Java or a JRE image), and routing calls to the least busy ready replica of a revision.
 */
@NullMarked
package ai.chalk.compute.server.worker;

import org.jspecify.annotations.NullMarked;
