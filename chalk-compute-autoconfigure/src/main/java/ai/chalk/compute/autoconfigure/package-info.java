/**
 * Spring Boot auto-configuration for Chalk Compute: the {@code chalk.compute.*} properties, the
 * gRPC channel and the {@code SandboxClient} bean; capabilities live in the sub-packages.
 */
package ai.chalk.compute.autoconfigure;
