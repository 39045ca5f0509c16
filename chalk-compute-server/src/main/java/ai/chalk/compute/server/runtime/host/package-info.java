/**
 * Host-side process plumbing shared by the runtimes that run on this machine: signals through libc, /proc readings,
 * process waits and tree kills, terminal stdin, state-directory locks and keys, and no-follow tree deletion.
 */
package ai.chalk.compute.server.runtime.host;
