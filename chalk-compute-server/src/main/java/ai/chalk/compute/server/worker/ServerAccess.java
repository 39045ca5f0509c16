package ai.chalk.compute.server.worker;

import ai.chalk.compute.server.auth.WorkloadTokens;
import java.nio.file.Path;

/**
 * How deployed code reaches the server that runs it: the directory of the server's socket, bound read-only into each
 * replica, and the rotating tokens that say which function (and so which environment) a replica's calls come from.
 *
 * @param socketDir the directory holding the server's socket for replicas
 * @param tokens    the replicas' token files
 */
public record ServerAccess(Path socketDir, WorkloadTokens tokens) {}
