/**
 * code_sandboxes' API in Java: {@link ai.chalk.compute.code.CodeSandbox#runCode(String)} with state kept between
 * snippets (Python through {@code ExecutePython}, Java through JShell), results and errors apart, files and commands.
 */
@NullMarked
package ai.chalk.compute.code;

import org.jspecify.annotations.NullMarked;
