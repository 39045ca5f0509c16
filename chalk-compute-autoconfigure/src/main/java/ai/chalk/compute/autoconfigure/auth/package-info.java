/**
 * Who the application is to a remote Chalk Compute server: credentials resolved as the SDK does
 * (properties, then environment variables, then ~/.chalk.yml) and the token sent with each call.
 */
@NullMarked
package ai.chalk.compute.autoconfigure.auth;

import org.jspecify.annotations.NullMarked;
