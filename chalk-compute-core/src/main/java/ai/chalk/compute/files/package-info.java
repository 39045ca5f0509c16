/**
 * Files in a sandbox: read, write, list, stat, move and remove them, and stream large files up and down,
 * through {@link ai.chalk.compute.files.SandboxFiles} ({@code sandbox.files()}), built on exec so it works with any server.
 */
@NullMarked
package ai.chalk.compute.files;

import org.jspecify.annotations.NullMarked;
