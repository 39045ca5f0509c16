/**
 * Host-side process plumbing shared by the runtimes that run on this machine: signals through libc, /proc readings,
 * process waits and tree kills, terminal stdin, state-directory locks and keys, no-follow tree deletion, and file work
 * beneath a directory that sandboxes write ({@link ai.chalk.compute.server.runtime.host.BeneathRoot}).
 */
@NullMarked
package ai.chalk.compute.server.runtime.host;

import org.jspecify.annotations.NullMarked;
