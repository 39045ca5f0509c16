package ai.chalk.compute.error;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

/** The translation every client's calls go through; the clients against a real server are in {@code NotFoundTest}. */
class ServerCallTest {

    @ParameterizedTest
    @CsvSource({
        "SANDBOX, ai.chalk.compute.error.SandboxNotFoundException",
        "VOLUME, ai.chalk.compute.error.VolumeNotFoundException",
        "IMAGE_BUILD, ai.chalk.compute.error.ImageBuildNotFoundException",
        "FUNCTION, ai.chalk.compute.error.FunctionNotFoundException",
        "FUNCTION_CALL, ai.chalk.compute.error.FunctionCallNotFoundException",
        "SCALING_GROUP, ai.chalk.compute.error.ScalingGroupNotFoundException",
    })
    void aNotFoundNamesTheKindTheCallAskedAbout(ResourceKind about, Class<?> type) {
        StatusRuntimeException grpc =
                Status.NOT_FOUND.withDescription("no such thing \"x\"").asRuntimeException();
        assertThatThrownBy(() -> ServerCall.run(about, () -> {
                    throw grpc;
                }))
                .isExactlyInstanceOf(type)
                .isInstanceOf(NotFoundException.class)
                .hasMessage("NOT_FOUND: no such thing \"x\"")
                .hasCause(grpc)
                .satisfies(e ->
                        assertThat(((ChalkComputeException) e).serverMessage()).isEqualTo("no such thing \"x\""));
    }

    @ParameterizedTest
    @EnumSource(ResourceKind.class)
    void aNotFoundInsideAStreamNamesTheKindToo(ResourceKind about) {
        NotFoundException fromStream =
                (NotFoundException) ServerCall.failure(about, ChalkComputeException.fromCodeName("NOT_FOUND", "gone"));
        NotFoundException fromCall = (NotFoundException) ServerCall.failure(
                about, Status.NOT_FOUND.withDescription("gone").asRuntimeException());
        assertThat(fromStream).isExactlyInstanceOf(fromCall.getClass()).hasMessage("NOT_FOUND: gone");
        assertThat(fromCall.getClass()).isNotEqualTo(NotFoundException.class);
    }

    @Test
    void otherStatusesKeepTheirOwnTypes() {
        assertThat(ServerCall.failure(
                        ResourceKind.FUNCTION,
                        Status.FAILED_PRECONDITION.withDescription("not yet").asRuntimeException()))
                .isExactlyInstanceOf(FailedPreconditionException.class);
        assertThat(ServerCall.failure(ResourceKind.SANDBOX, Status.UNAVAILABLE.asRuntimeException()))
                .isExactlyInstanceOf(ServerUnavailableException.class);
    }

    @Test
    void aFailureThatAlreadyNamesWhatIsMissingIsKept() {
        VolumeNotFoundException volume = new VolumeNotFoundException("volume cache does not exist", null);
        assertThat(ServerCall.failure(ResourceKind.SANDBOX, volume)).isSameAs(volume);
    }

    @Test
    void aResponseAndExceptionsThatAreNotGrpcPassThrough() {
        assertThat(ServerCall.run(ResourceKind.SANDBOX, () -> "answer")).isEqualTo("answer");
        IllegalStateException local = new IllegalStateException("a client-side bug");
        assertThatThrownBy(() -> ServerCall.run(ResourceKind.SANDBOX, () -> {
                    throw local;
                }))
                .isSameAs(local);
    }
}
