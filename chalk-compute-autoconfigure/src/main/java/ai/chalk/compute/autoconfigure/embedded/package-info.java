/**
 * The Chalk Compute server embedded in the application: started and stopped with the context,
 * in-process only unless a port is asked for, active when no remote target is configured.
 */
@NullMarked
package ai.chalk.compute.autoconfigure.embedded;

import org.jspecify.annotations.NullMarked;
