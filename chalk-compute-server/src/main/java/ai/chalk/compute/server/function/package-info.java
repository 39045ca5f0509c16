/**
 * The external function catalog: deploying function versions (the protocol's ensure), rollback, and calls routed
 * to function workers, synchronous or queued.
 */
@NullMarked
package ai.chalk.compute.server.function;

import org.jspecify.annotations.NullMarked;
