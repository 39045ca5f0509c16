package ai.chalk.compute.error;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ChalkComputeExceptionTest {

    @ParameterizedTest
    @CsvSource({
        "NOT_FOUND, ai.chalk.compute.error.NotFoundException",
        "INVALID_ARGUMENT, ai.chalk.compute.error.InvalidRequestException",
        "FAILED_PRECONDITION, ai.chalk.compute.error.FailedPreconditionException",
        "UNAVAILABLE, ai.chalk.compute.error.ServerUnavailableException",
        "UNAUTHENTICATED, ai.chalk.compute.error.AuthenticationException",
        "PERMISSION_DENIED, ai.chalk.compute.error.AuthenticationException",
        "DEADLINE_EXCEEDED, ai.chalk.compute.error.DeadlineExceededException",
        "INTERNAL, ai.chalk.compute.error.ChalkComputeException",
        "RESOURCE_EXHAUSTED, ai.chalk.compute.error.ChalkComputeException",
    })
    void mapsEachStatusToItsType(Status.Code code, Class<?> type) {
        StatusRuntimeException grpc = Status.fromCode(code)
                .withDescription("sandbox abc: it went wrong")
                .asRuntimeException();
        ChalkComputeException e = ChalkComputeException.from(grpc);
        assertThat(e).isExactlyInstanceOf(type);
        assertThat(e.statusCode()).isEqualTo(code);
        assertThat(e.serverMessage()).isEqualTo("sandbox abc: it went wrong");
        assertThat(e.getMessage()).isEqualTo(code + ": sandbox abc: it went wrong");
        assertThat(e.getCause()).isSameAs(grpc);
    }

    @ParameterizedTest
    @CsvSource({
        "NOT_FOUND, ai.chalk.compute.error.NotFoundException",
        "INVALID_ARGUMENT, ai.chalk.compute.error.InvalidRequestException",
        "FAILED_PRECONDITION, ai.chalk.compute.error.FailedPreconditionException",
        "INTERNAL, ai.chalk.compute.error.ChalkComputeException",
    })
    void streamErrorsMapLikeStatuses(String code, Class<?> type) {
        ChalkComputeException fromStream = ChalkComputeException.fromCodeName(code, "no such thing");
        ChalkComputeException fromStatus = ChalkComputeException.from(Status.fromCode(Status.Code.valueOf(code))
                .withDescription("no such thing")
                .asRuntimeException());
        assertThat(fromStream).isExactlyInstanceOf(type).hasMessage(fromStatus.getMessage());
        assertThat(fromStream.statusCode()).isEqualTo(fromStatus.statusCode());
        assertThat(fromStream.serverMessage()).isEqualTo("no such thing");
    }

    @Test
    void unknownStreamCodeKeepsTheCodeInTheMessage() {
        ChalkComputeException e = ChalkComputeException.fromCodeName("SANDBOX_GONE", "bye");
        assertThat(e.statusCode()).isEqualTo(Status.Code.UNKNOWN);
        assertThat(e.getMessage()).contains("SANDBOX_GONE").contains("bye");
        assertThat(ChalkComputeException.fromCodeName("not_found", "x")).isExactlyInstanceOf(NotFoundException.class);
    }

    @Test
    void statusWithoutDescriptionUsesItsCause() {
        ChalkComputeException e = ChalkComputeException.from(Status.UNAVAILABLE
                .withCause(new IOException("connection refused"))
                .asRuntimeException());
        assertThat(e).isInstanceOf(ServerUnavailableException.class);
        assertThat(e.getMessage()).contains("connection refused");
    }

    @Test
    void otherThrowablesAreTranslatedOrPassedThrough() {
        InvalidRequestException typed = new InvalidRequestException("bad");
        assertThat(ChalkComputeException.from((Throwable) typed)).isSameAs(typed);
        assertThat(ChalkComputeException.from(new IllegalStateException("boom")).statusCode())
                .isEqualTo(Status.Code.UNKNOWN);
        assertThat(ChalkComputeException.from(Status.NOT_FOUND.asException()))
                .isExactlyInstanceOf(NotFoundException.class)
                .hasMessage("NOT_FOUND");
    }
}
