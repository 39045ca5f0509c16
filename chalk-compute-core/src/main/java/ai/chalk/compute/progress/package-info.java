/**
 * Progress of long operations on stderr in the SDK's format (a named group, a guide, a closing line), mirrored to SLF4J,
 * and the report of background failures that no caller observed; switched by {@code CHALK_SANDBOX_TUI} and {@code NO_COLOR}.
 */
@NullMarked
package ai.chalk.compute.progress;

import org.jspecify.annotations.NullMarked;
