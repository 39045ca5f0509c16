/**
 * The syscall filter of local sandboxes: Docker's default seccomp profile for a container without capabilities,
 * compiled by libseccomp into a BPF program for bubblewrap's {@code --seccomp} and for an exec wrapper that installs it.
 */
@NullMarked
package ai.chalk.compute.server.runtime.seccomp;

import org.jspecify.annotations.NullMarked;
