/**
 * The runtime SPI: how the server starts, suspends, snapshots and stops sandboxes and runs processes in them on an
 * execution engine. Services speak only to these types; each engine (local, docker, kubernetes) implements them.
 */
@NullMarked
package ai.chalk.compute.server.runtime;

import org.jspecify.annotations.NullMarked;
