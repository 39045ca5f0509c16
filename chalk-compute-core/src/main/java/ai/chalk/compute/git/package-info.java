/**
 * Git inside a sandbox: clone, status, branches, fetch, pull, push, reset, restore, remotes and config
 * through {@link ai.chalk.compute.git.SandboxGit} ({@code sandbox.git()}), built on exec; failures are {@link ai.chalk.compute.git.GitException}s.
 */
@NullMarked
package ai.chalk.compute.git;

import org.jspecify.annotations.NullMarked;
