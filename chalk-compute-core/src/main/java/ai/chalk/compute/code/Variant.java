package ai.chalk.compute.code;

import java.util.Locale;

/** Where a {@link CodeSandbox} runs, by code_sandboxes' variant names. */
public enum Variant {
    /** A sandbox on the configured Chalk Compute server (embedded or remote), through {@code ExecutePython}. */
    CHALK,
    /** A kernel on a Jupyter server by URL and token: {@link CodeSandbox#connectJupyter}. */
    JUPYTER,
    /** A Jupyter server in a container on the Docker engine. */
    DOCKER,
    /** A local Jupyter server and Python kernel as plain processes of this machine, with no isolation. */
    EVAL,
    /** Modal's hosted sandboxes, which this SDK cannot reach. */
    MODAL,
    /** Google Colab runtimes, which this SDK cannot reach. */
    COLAB,
    /** Datalayer's hosted runtimes, which this SDK cannot reach. */
    DATALAYER;

    /** What the refusals say. */
    static final String RUNNING = "the variants that run here are chalk (a Chalk Compute sandbox, on the embedded"
            + " server or a remote one), docker (a Jupyter server in a container on a Docker engine), eval (a local"
            + " Python kernel, no isolation) and jupyter (any Jupyter server: CodeSandbox.connectJupyter)";

    /** The variant named {@code name} as code_sandboxes spells it ({@code "chalk"}, {@code "jupyter"}, ...). */
    public static Variant of(String name) {
        try {
            return valueOf(name.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("unknown variant \"" + name + "\"; " + RUNNING);
        }
    }

    /** The name code_sandboxes uses. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }
}
