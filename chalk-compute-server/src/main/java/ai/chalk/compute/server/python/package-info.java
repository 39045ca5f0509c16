/**
 * {@code chalk.sandbox.v1.SandboxRuntimeService/ExecutePython}: a persistent Python interpreter per sandbox (our
 * driver, run through the sandbox's exec path), whose every byte of output the server bounds and checks.
 */
@NullMarked
package ai.chalk.compute.server.python;

import org.jspecify.annotations.NullMarked;
