/**
 * Arrow IPC bytes, the encoding of function payloads, without JVM flags: buffers copied through heap arrays, since
 * Arrow's own channels need {@code --add-opens java.base/java.nio} on JDK 17; framing checked before Arrow allocates
 * what a payload claims.
 */
@NullMarked
package ai.chalk.compute.proto.arrow;

import org.jspecify.annotations.NullMarked;
