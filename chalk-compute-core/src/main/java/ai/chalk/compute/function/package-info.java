/**
 * Functions from annotated Java methods ({@code @ChalkFunction}, {@code @ChalkClass}, {@code @ChalkScorer}):
 * discovered and validated by a {@link ai.chalk.compute.function.FunctionRegistry}, described with Arrow schemas, called from Arrow payloads.
 */
@NullMarked
package ai.chalk.compute.function;

import org.jspecify.annotations.NullMarked;
