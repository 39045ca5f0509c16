package ai.chalk.compute.code;

import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * What a snippet did, as code_sandboxes' {@code ExecutionResult}. Four outcomes are kept apart, checked in this
 * order:
 * <ol>
 *   <li>{@link #executionOk()} false: the snippet could not run or was stopped from outside (no sandbox, no
 *       interpreter, a timeout, a lost connection); {@link #executionError()} says what;</li>
 *   <li>{@link #exitCode()} present and not 0: the snippet ended its interpreter ({@code sys.exit(3)},
 *       {@code System.exit(3)}) or the interpreter died; the next snippet starts with a fresh state;</li>
 *   <li>{@link #codeError()} present: the snippet raised an exception (including a {@code KeyboardInterrupt} from
 *       {@link CodeSandbox#interrupt()}); the state is kept;</li>
 *   <li>otherwise it succeeded: {@link #text()} is the value of its last expression.</li>
 * </ol>
 *
 * <pre>{@code
 * ExecutionResult result = sandbox.runCode("print('hello')");
 * if (!result.executionOk()) {
 *     System.out.println("Sandbox failed: " + result.executionError().orElseThrow());
 * } else if (result.exitCode().isPresent() && result.exitCode().getAsInt() != 0) {
 *     System.out.println("Process exited with code: " + result.exitCode().getAsInt());
 * } else if (result.codeError().isPresent()) {
 *     System.out.println("Python error: " + result.codeError().get());
 * } else {
 *     System.out.println(result.text());
 * }
 * }</pre>
 *
 * @param stdout           everything the snippet wrote to stdout
 * @param stderr           everything it wrote to stderr
 * @param results          its rich results in order: what it displayed, and its last expression's value
 * @param codeError        the exception that ended it
 * @param executionOk      whether the infrastructure ran it to its end
 * @param executionError   why it did not
 * @param exitCode         the interpreter's exit code when the snippet ended the interpreter
 * @param skippedArtifacts results the server did not send, with why
 */
public record ExecutionResult(
        String stdout,
        String stderr,
        List<Result> results,
        Optional<CodeError> codeError,
        boolean executionOk,
        Optional<String> executionError,
        OptionalInt exitCode,
        List<SkippedArtifact> skippedArtifacts) {

    public ExecutionResult {
        results = List.copyOf(results);
        skippedArtifacts = List.copyOf(skippedArtifacts);
    }

    /** Whether the snippet ran to its end without an error and without ending its interpreter with a non-zero code. */
    public boolean success() {
        return executionOk && codeError.isEmpty() && (exitCode.isEmpty() || exitCode.getAsInt() == 0);
    }

    /** The {@code text/plain} of the last expression's value; empty when the snippet did not end with a value. */
    public String text() {
        return results.stream()
                .filter(Result::isMainResult)
                .map(Result::text)
                .flatMap(Optional::stream)
                .findFirst()
                .orElse("");
    }

    static ExecutionResult failed(String stdout, String stderr, List<Result> results, String why) {
        return new ExecutionResult(
                stdout, stderr, results, Optional.empty(), false, Optional.of(why), OptionalInt.empty(), List.of());
    }
}
