package ai.chalk.compute.autoconfigure.tracing;

import ai.chalk.compute.autoconfigure.ChalkComputeChannelInterceptor;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.MethodDescriptor;
import io.micrometer.core.instrument.binder.grpc.ObservationGrpcClientInterceptor;
import io.micrometer.observation.ObservationRegistry;

/**
 * Micrometer's gRPC client observations ({@link ObservationGrpcClientInterceptor}) of the calls on the Chalk Compute
 * channel, made at the first call rather than with the bean: creating Micrometer's interceptor loads and initialises
 * its call wrappers, conventions and key names (some twenty classes), work the application's startup thread need not
 * do for calls that come later.
 */
final class ClientCallObservations implements ChalkComputeChannelInterceptor {

    private final ObservationRegistry registry;
    private volatile ClientInterceptor observations;

    ClientCallObservations(ObservationRegistry registry) {
        this.registry = registry;
    }

    @Override
    public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(
            MethodDescriptor<ReqT, RespT> method, CallOptions callOptions, Channel next) {
        ClientInterceptor interceptor = observations;
        if (interceptor == null) {
            synchronized (this) {
                interceptor = observations;
                if (interceptor == null) {
                    interceptor = new ObservationGrpcClientInterceptor(registry);
                    observations = interceptor;
                }
            }
        }
        return interceptor.interceptCall(method, callOptions, next);
    }
}
