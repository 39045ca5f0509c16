/**
 * code_sandboxes' API in Java: {@link ai.chalk.compute.code.CodeSandbox#runCode(String)} with state kept between
 * snippets, results and errors apart, files and commands, on the chalk, docker, eval and jupyter variants.
 */
@NullMarked
package ai.chalk.compute.code;

import org.jspecify.annotations.NullMarked;
