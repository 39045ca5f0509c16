/**
 * The threads the server starts: daemon threads named after what they do, so that a thread dump says what each one is
 * and none of them keeps a JVM alive that the server's owner is shutting down.
 */
@NullMarked
package ai.chalk.compute.server.threads;

import org.jspecify.annotations.NullMarked;
