/** The SDK as a whole: {@link ai.chalk.compute.ChalkCompute#configureLogging(String)} for plain Java programs; the
 *  client itself is {@link ai.chalk.compute.sandbox.SandboxClient}. */
@NullMarked
package ai.chalk.compute;

import org.jspecify.annotations.NullMarked;
