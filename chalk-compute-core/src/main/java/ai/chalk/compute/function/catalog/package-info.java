/**
 * A deployed function's versions as the server's catalog keeps them: list them, make one current again, delete the
 * function. Shared by deploying ({@code function.deploy}) and calling ({@code function.remote}), which need neither other.
 */
@NullMarked
package ai.chalk.compute.function.catalog;

import org.jspecify.annotations.NullMarked;
