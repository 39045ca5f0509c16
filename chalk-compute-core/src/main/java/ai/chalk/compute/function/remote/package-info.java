/** Calling deployed functions: {@link ai.chalk.compute.function.remote.RemoteFunction}, synchronously, in batches
 *  or queued, with remote failures raised as {@link ai.chalk.compute.error.RemoteExecutionException}. */
@NullMarked
package ai.chalk.compute.function.remote;

import org.jspecify.annotations.NullMarked;
