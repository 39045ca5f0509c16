/**
 * Arrow IPC bytes in the server without JVM flags: buffers copied through heap arrays, since Arrow's own channels need
 * {@code --add-opens java.base/java.nio} on JDK 17; framing checked before Arrow allocates what a payload claims.
 */
@NullMarked
package ai.chalk.compute.server.arrow;

import org.jspecify.annotations.NullMarked;
