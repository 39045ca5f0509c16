package ai.chalk.compute.error;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.common.v1.ChalkError;
import ai.chalk.compute.proto.common.v1.ChalkException;
import io.grpc.Metadata;
import io.grpc.Status;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Decoding remote failures from statuses and trailers; the worker's real trailers are decoded in FunctionWorkerProcessTest. */
class RemoteExecutionExceptionTest {

    @Test
    void aWorkerThatDiedDuringTheCallIsARemoteFailureWithoutAnException() {
        Metadata trailers = new Metadata();
        trailers.put(RemoteExecutionException.CALL_ID_TRAILER, "call-7");
        trailers.put(RemoteExecutionException.TRACE_ID_TRAILER, "trace-9");
        String description = "worker w-1 exited with status 137 during call call-7";

        ChalkComputeException e = RemoteExecutionException.fromCall(
                Status.UNAVAILABLE.withDescription(description).asRuntimeException(trailers));

        assertThat(e).isInstanceOfSatisfying(RemoteExecutionException.class, r -> {
            assertThat(r.statusCode()).isEqualTo(Status.Code.UNAVAILABLE);
            assertThat(r.exceptionType()).isEmpty();
            assertThat(r.remoteMessage()).isEqualTo(description);
            assertThat(r.callId()).contains("call-7");
            assertThat(r.traceId()).contains("trace-9");
            assertThat(r.getMessage())
                    .isEqualTo("UNAVAILABLE: " + description + "\ncall id: call-7\ntrace id: trace-9");
        });
    }

    @Test
    void otherFailuresKeepTheirOwnTypes() {
        assertThat(RemoteExecutionException.fromCall(
                        Status.UNAVAILABLE.withDescription("connection refused").asRuntimeException()))
                .isInstanceOf(ServerUnavailableException.class)
                .isNotInstanceOf(RemoteExecutionException.class);
        assertThat(RemoteExecutionException.fromCall(
                        Status.NOT_FOUND.withDescription("no such function").asRuntimeException()))
                .isNotInstanceOf(RemoteExecutionException.class);
        assertThat(RemoteExecutionException.fromCall(new IllegalStateException("boom")))
                .isNotInstanceOf(RemoteExecutionException.class);
        assertThat(RemoteExecutionException.from(Status.UNKNOWN, new Metadata(), null))
                .isEqualTo(Optional.empty());
    }

    @Test
    void aPolledErrorKeepsTheRemoteException() {
        ChalkError error = ChalkError.newBuilder()
                .setMessage("java.lang.ArithmeticException: / by zero")
                .setException(ChalkException.newBuilder()
                        .setKind("java.lang.ArithmeticException")
                        .setMessage("/ by zero")
                        .setStacktrace(
                                "java.lang.ArithmeticException: / by zero\n\tat com.acme.Math.div(Math.java:3)\n")
                        .setInternalStacktrace("full"))
                .build();

        RemoteExecutionException e = RemoteExecutionException.of(Status.Code.UNKNOWN, "", error, "call-1", null, null);

        assertThat(e.serverMessage()).isEqualTo("java.lang.ArithmeticException: / by zero");
        assertThat(e.exceptionType()).isEqualTo("java.lang.ArithmeticException");
        assertThat(e.remoteMessage()).isEqualTo("/ by zero");
        assertThat(e.internalTraceback()).isEqualTo("full");
        assertThat(e.getMessage())
                .contains(
                        "remote traceback:\njava.lang.ArithmeticException: / by zero\n\tat com.acme.Math.div(Math.java:3)",
                        "call id: call-1");
        assertThat(e.traceId()).isEmpty();
    }
}
