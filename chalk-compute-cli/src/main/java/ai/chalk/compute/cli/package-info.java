/**
 * The {@code chalk-compute} command line: a code REPL, sandboxes with an interactive shell, functions and image builds,
 * each command a thin picocli layer over the plain-Java SDK, connecting as
 * {@code SandboxClient.fromEnv(System.getenv())} does.
 */
@NullMarked
package ai.chalk.compute.cli;

import org.jspecify.annotations.NullMarked;
