package ai.chalk.compute.server.exec;

import ai.chalk.compute.server.runtime.ExitStatus;

/**
 * How a run ended.
 *
 * @param status   the process's exit status
 * @param timedOut whether the server killed it because its timeout ran out
 */
public record RunResult(ExitStatus status, boolean timedOut) {}
