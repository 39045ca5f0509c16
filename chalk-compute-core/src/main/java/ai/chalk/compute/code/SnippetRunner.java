package ai.chalk.compute.code;

import java.time.Duration;
import java.util.Optional;

/** Runs snippets of one language in one sandbox, keeping state between them. */
interface SnippetRunner extends AutoCloseable {

    /** Runs {@code code} and waits for its result; never throws for what the snippet or the sandbox did. */
    ExecutionResult run(String code, RunOptions options, Optional<Duration> defaultTimeout);

    /** Interrupts the snippet running now, if any. */
    void interrupt();

    /** Lets go of what the runner holds in the sandbox. */
    @Override
    default void close() {}
}
