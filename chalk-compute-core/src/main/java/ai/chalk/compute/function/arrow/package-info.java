/**
 * How function arguments and results travel: Java types mapped to Arrow fields, rows encoded to and
 * decoded from Arrow IPC streams, and custom types (such as sandbox handles) carried by identity.
 */
@NullMarked
package ai.chalk.compute.function.arrow;

import org.jspecify.annotations.NullMarked;
