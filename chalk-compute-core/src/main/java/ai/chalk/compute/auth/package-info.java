/**
 * Identity: finds Chalk credentials (code, environment, {@code ~/.chalk.yml}), turns them into access tokens
 * (client-credentials exchange or a rotating token file) and attaches them to every gRPC call.
 */
@NullMarked
package ai.chalk.compute.auth;

import org.jspecify.annotations.NullMarked;
