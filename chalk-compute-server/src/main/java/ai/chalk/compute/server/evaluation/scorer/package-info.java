/**
 * The built-in evaluation scorers ({@code exact_match}, {@code levenshtein}, {@code regex_match}, {@code contains},
 * {@code numeric_close}, {@code string_similarity}, {@code json_valid}, {@code json_match},
 * {@code embedding_similarity}): named by id and options, run by the server on each row of a run, scoring 0..1.
 */
@NullMarked
package ai.chalk.compute.server.evaluation.scorer;

import org.jspecify.annotations.NullMarked;
