/**
 * Secrets: {@link ai.chalk.compute.secret.Secret} references that sandboxes, scaling groups and functions receive as
 * environment variables, and the {@link ai.chalk.compute.secret.SecretsClient} that manages an environment's secrets.
 * A secret's value never appears in a {@code toString}, an exception message or a log line of this SDK.
 */
package ai.chalk.compute.secret;
