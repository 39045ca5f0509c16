package ai.chalk.compute.server.python;

import java.util.Map;

/**
 * {@link ExecutePythonTest} on the driver's own namespace, as in an image without IPython: the sandboxes set
 * {@code CHALK_PYTHON_SHELL=plain}, which makes the driver skip IPython.
 */
class ExecutePythonPlainDriverTest extends ExecutePythonTest {

    @Override
    Map<String, String> sandboxEnv() {
        return Map.of("CHALK_PYTHON_SHELL", "plain");
    }
}
