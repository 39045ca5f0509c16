package ai.chalk.compute.autoconfigure;

import io.grpc.ClientInterceptor;
import org.springframework.core.Ordered;

/**
 * A gRPC client interceptor the auto-configuration puts in front of the {@link ChalkComputeChannel},
 * for concerns of Chalk Compute calls only (the channel's own Spring gRPC global interceptors still
 * apply behind them). Declare one as a bean; the lowest {@link #getOrder() order} sees each call first.
 *
 * <pre>{@code
 * @Bean
 * ChalkComputeChannelInterceptor auditChalkCalls() {
 *     return ChalkComputeChannelInterceptor.of(new AuditInterceptor());
 * }
 * }</pre>
 */
public interface ChalkComputeChannelInterceptor extends ClientInterceptor, Ordered {

    /**
     * Whether this interceptor applies to a channel of the given kind; all kinds by default.
     *
     * @param kind where the channel leads
     * @return whether to apply it
     */
    default boolean appliesTo(ChalkComputeChannel.Kind kind) {
        return true;
    }

    /** Order {@code 0} unless overridden. */
    @Override
    default int getOrder() {
        return 0;
    }

    /**
     * Adapts a plain interceptor, applied to every kind of channel with order {@code 0}.
     *
     * @param interceptor the interceptor
     * @return the adapter
     */
    static ChalkComputeChannelInterceptor of(ClientInterceptor interceptor) {
        return interceptor::interceptCall;
    }
}
