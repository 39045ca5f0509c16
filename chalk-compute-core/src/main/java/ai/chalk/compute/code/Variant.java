package ai.chalk.compute.code;

import java.util.Locale;

/** Where a {@link CodeSandbox} runs, by code_sandboxes' variant names. */
public enum Variant {
    /** A sandbox on the configured Chalk Compute server (embedded or remote), through {@code ExecutePython}. */
    CHALK,
    /** A kernel on a Jupyter server by URL and token: {@link CodeSandbox#connectJupyter}. */
    JUPYTER,
    /** A Jupyter server in a Docker container: not available in this version of the SDK. */
    DOCKER,
    /** A local interpreter with no isolation: not available in this version of the SDK. */
    EVAL,
    /** Modal's hosted sandboxes, which this SDK cannot reach. */
    MODAL,
    /** Google Colab runtimes, which this SDK cannot reach. */
    COLAB,
    /** Datalayer's hosted runtimes, which this SDK cannot reach. */
    DATALAYER;

    /** The variant named {@code name} as code_sandboxes spells it ({@code "chalk"}, {@code "jupyter"}, ...). */
    public static Variant of(String name) {
        try {
            return valueOf(name.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "unknown variant \"" + name + "\"; the variants that run here are chalk and jupyter");
        }
    }

    /** The name code_sandboxes uses. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }
}
