/**
 * The sample application: a Spring Boot program that uses the injected {@code SandboxClient} on the
 * embedded server to create, run, stream, drive stdin, signal and terminate, with actuator enabled.
 */
@NullMarked
package ai.chalk.compute.sample;

import org.jspecify.annotations.NullMarked;
