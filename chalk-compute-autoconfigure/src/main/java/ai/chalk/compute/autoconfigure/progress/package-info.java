/**
 * The SDK's progress display on stderr, switched by {@code chalk.compute.tui} and coloured by
 * {@code chalk.compute.color} over {@code CHALK_SANDBOX_TUI} and {@code NO_COLOR}.
 */
@NullMarked
package ai.chalk.compute.autoconfigure.progress;

import org.jspecify.annotations.NullMarked;
