/** The function worker: the process a deployed function's replica runs, serving calls on a Unix socket.
 *  Started by the server with {@link ai.chalk.compute.function.worker.FunctionWorker} as its main class. */
@NullMarked
package ai.chalk.compute.function.worker;

import org.jspecify.annotations.NullMarked;
