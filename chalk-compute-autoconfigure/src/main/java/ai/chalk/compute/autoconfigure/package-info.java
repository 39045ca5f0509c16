/**
 * Spring Boot auto-configuration for Chalk Compute: {@code chalk.compute.*} properties, a
 * {@code SandboxClient} bean, and the embedded server when no remote target is configured.
 */
package ai.chalk.compute.autoconfigure;
