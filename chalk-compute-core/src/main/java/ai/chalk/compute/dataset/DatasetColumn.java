package ai.chalk.compute.dataset;

/**
 * A column of a dataset revision.
 *
 * @param name its name
 * @param type its type as the server's engine names it, e.g. {@code BIGINT}, {@code DOUBLE}, {@code VARCHAR},
 *             {@code TIMESTAMP}; empty when the server did not say
 */
public record DatasetColumn(String name, String type) {}
