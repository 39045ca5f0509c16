package ai.chalk.compute.autoconfigure.auth;

import ai.chalk.compute.auth.ChalkAuthInterceptor;
import ai.chalk.compute.auth.TokenSource;
import ai.chalk.compute.autoconfigure.ChalkComputeChannel;
import ai.chalk.compute.autoconfigure.ChalkComputeChannelInterceptor;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.MethodDescriptor;
import java.util.Objects;
import org.springframework.core.Ordered;

/**
 * Sends a Chalk access token with every call to a remote server (never to the embedded one, which
 * needs none). Tokens come from a {@link TokenSource}: client credentials exchanged with Chalk's
 * AuthService, or a rotating workload-identity token file.
 */
public final class ChalkComputeAuthInterceptor implements ChalkComputeChannelInterceptor, AutoCloseable {

    /** Runs after the tracing interceptors, so failed authentication shows in the call's span. */
    public static final int ORDER = Ordered.LOWEST_PRECEDENCE - 100;

    private final TokenSource tokens;
    private final boolean ownsTokens;
    private final ChalkAuthInterceptor delegate;

    /**
     * @param tokens     where tokens come from
     * @param ownsTokens whether closing this interceptor closes the token source
     */
    public ChalkComputeAuthInterceptor(TokenSource tokens, boolean ownsTokens) {
        this.tokens = Objects.requireNonNull(tokens, "tokens");
        this.ownsTokens = ownsTokens;
        this.delegate = new ChalkAuthInterceptor(tokens);
    }

    /** Where tokens come from. */
    public TokenSource tokenSource() {
        return tokens;
    }

    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
        return delegate.interceptCall(method, options, next);
    }

    /** Remote channels only. */
    @Override
    public boolean appliesTo(ChalkComputeChannel.Kind kind) {
        return kind == ChalkComputeChannel.Kind.REMOTE;
    }

    @Override
    public int getOrder() {
        return ORDER;
    }

    /** Closes the token source when this interceptor created it. */
    @Override
    public void close() {
        if (ownsTokens) {
            tokens.close();
        }
    }

    @Override
    public String toString() {
        return "ChalkComputeAuthInterceptor[" + tokens + "]";
    }
}
