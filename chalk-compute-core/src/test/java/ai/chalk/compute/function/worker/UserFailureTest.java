package ai.chalk.compute.function.worker;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.error.RemoteExecutionException;
import ai.chalk.compute.proto.common.v1.ChalkError;
import io.grpc.StatusRuntimeException;
import java.util.Base64;
import org.junit.jupiter.api.Test;

/** A deep stack or a huge message still fits the trailer a default gRPC client accepts (8 KiB of headers). */
class UserFailureTest {

    private static final int DEFAULT_MAX_METADATA_BYTES = 8192;

    @Test
    void aDeepStackAndALongMessageAreCutToFitTheTrailer() {
        RuntimeException deep = recurse(600, "x".repeat(20_000));
        StatusRuntimeException status = UserFailure.toStatus(new IllegalStateException("wrapped", deep));

        ChalkError error = status.getTrailers().get(RemoteExecutionException.ERROR_TRAILER);
        int base64 = Base64.getEncoder().encodeToString(error.toByteArray()).length();
        int description = status.getStatus().getDescription().length();
        assertThat(base64 + description).as("trailer and grpc-message").isLessThan(DEFAULT_MAX_METADATA_BYTES - 1024);
        assertThat(error.getException().getStacktrace())
                .startsWith("java.lang.IllegalStateException: wrapped\n")
                .containsPattern("\t… \\d+ more lines\n$");
        assertThat(error.getException().getInternalStacktrace()).contains("more lines");
        assertThat(error.getException().getMessage()).isEqualTo("wrapped");
    }

    @Test
    void shortTextIsKeptWhole() {
        assertThat(UserFailure.cut("one\ntwo\n", 100)).isEqualTo("one\ntwo\n");
        assertThat(UserFailure.cut("y".repeat(600), 100)).endsWith("… (cut)").hasSizeLessThan(100);
    }

    private static RuntimeException recurse(int depth, String message) {
        if (depth == 0) {
            return new RuntimeException(message);
        }
        return recurse(depth - 1, message);
    }
}
