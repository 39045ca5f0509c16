/**
 * Spring Boot auto-configuration for Chalk Compute: the {@code chalk.compute.*} properties, the
 * gRPC channel and the {@code SandboxClient} bean; capabilities live in the sub-packages.
 */
@NullMarked
package ai.chalk.compute.autoconfigure;

import org.jspecify.annotations.NullMarked;
