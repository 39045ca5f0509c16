package ai.chalk.compute.function.worker;

import ai.chalk.compute.server.function.TestFunctionWorker;

/**
 * The protocol's worker main class name, in the server's TEST sources only: the server launches
 * {@code ai.chalk.compute.function.worker.FunctionWorker} exactly as docs/functions-protocol.md says, and in the
 * server's tests that name starts {@link TestFunctionWorker}. The real worker lives in chalk-compute-core, which
 * the server's test class path does not include.
 */
public final class FunctionWorker {

    private FunctionWorker() {}

    public static void main(String[] args) throws Exception {
        TestFunctionWorker.main(args);
    }
}
