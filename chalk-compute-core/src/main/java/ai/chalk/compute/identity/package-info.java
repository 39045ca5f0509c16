/**
 * Who the calling code is to third parties: identity tokens the server mints for the active environment, for a given
 * audience, verifiable with the server's published keys.
 */
@NullMarked
package ai.chalk.compute.identity;

import org.jspecify.annotations.NullMarked;
