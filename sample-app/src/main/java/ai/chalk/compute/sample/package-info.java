/**
 * The sample application: a Spring Boot program that uses the injected {@code SandboxClient}
 * on the embedded server to create a sandbox, run, stream, drive stdin, signal and terminate.
 */
package ai.chalk.compute.sample;
