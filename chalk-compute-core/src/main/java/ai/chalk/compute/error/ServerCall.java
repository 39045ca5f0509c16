package ai.chalk.compute.error;

import io.grpc.StatusRuntimeException;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * The one way the SDK's clients call a Chalk Compute server: a call that fails is reported as the SDK's typed
 * exception for its status, and a {@code NOT_FOUND} as the {@link NotFoundException} of the {@link ResourceKind} the
 * call asked about, so that a missing function is a {@link FunctionNotFoundException} and never a missing sandbox.
 * The server's message and the gRPC exception (as the cause) are kept.
 *
 * <p>Use it around a generated stub of your own to get the same exceptions:
 * <pre>{@code
 * VolumeInfo info = ServerCall.run(ResourceKind.VOLUME,
 *         () -> stub.getVolume(GetVolumeRequest.newBuilder().setName("cache").build())).getVolume();
 * }</pre>
 */
public final class ServerCall {

    private ServerCall() {}

    /**
     * Runs a blocking call (or a step of a server stream, such as {@code Iterator::hasNext}) and reports its failure
     * as an SDK exception. Exceptions other than gRPC's pass through unchanged.
     *
     * @param about what the call asks about: the kind a {@code NOT_FOUND} answer means is missing
     * @param call  the call
     * @param <T>   the call's response
     * @return the call's response
     * @throws ChalkComputeException when the call fails: {@code about}'s {@link NotFoundException} for
     *                               {@code NOT_FOUND}, else the exception for the status (see
     *                               {@link ChalkComputeException#of})
     */
    public static <T> T run(ResourceKind about, Supplier<T> call) {
        Objects.requireNonNull(about, "about");
        try {
            return call.get();
        } catch (StatusRuntimeException e) {
            throw failure(about, e);
        }
    }

    /**
     * Reports a failure that reached a client some other way (a stream observer's {@code onError}, a failed future,
     * an error event inside a stream) as an SDK exception, in the same way as {@link #run}.
     *
     * @param about   what the call asked about: the kind a {@code NOT_FOUND} means is missing
     * @param failure a gRPC exception, an SDK exception, or anything else
     * @return the SDK exception; an SDK exception that already names what is missing is returned as is
     */
    public static ChalkComputeException failure(ResourceKind about, Throwable failure) {
        Objects.requireNonNull(about, "about");
        ChalkComputeException translated = ChalkComputeException.from(failure);
        // a plain NotFoundException has not been told what it is about; one of a subclass has, and is kept
        if (translated.getClass() == NotFoundException.class) {
            return about.notFound(translated.serverMessage(), translated.getCause());
        }
        return translated;
    }
}
