package ai.chalk.compute.auth;

import ai.chalk.compute.error.ChalkComputeException;
import io.grpc.CallCredentials;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.CompositeCallCredentials;
import io.grpc.ForwardingClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.SecurityLevel;
import io.grpc.Status;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Authenticates every gRPC call with a token from a {@link TokenSource}: adds
 * {@code authorization: Bearer <token>} and, when the token names one, {@code x-chalk-env-id: <environment>}.
 *
 * <pre>{@code
 * TokenSource tokens = TokenSource.from(ChalkCredentials.fromEnv());
 * Channel channel = ClientInterceptors.intercept(managedChannel, new ChalkAuthInterceptor(tokens));
 * }</pre>
 *
 * <p>The token is fetched when a call starts, never at construction, and off the caller's thread (on the
 * channel's executor, as gRPC call credentials are). If no token can be obtained the call fails with the
 * source's status ({@code UNAUTHENTICATED} for rejected credentials, {@code UNAVAILABLE} when the API server
 * cannot be reached) and nothing is sent. When a server answers {@code UNAUTHENTICATED}, the source is told
 * so that the next call fetches a new token. Tokens and secrets are never logged.
 */
public final class ChalkAuthInterceptor implements ClientInterceptor {

    /** The {@code authorization} header, carrying {@code Bearer <token>}. */
    public static final Metadata.Key<String> AUTHORIZATION =
            Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);
    /** The {@code x-chalk-env-id} header, carrying the environment the call acts in. */
    public static final Metadata.Key<String> ENVIRONMENT =
            Metadata.Key.of("x-chalk-env-id", Metadata.ASCII_STRING_MARSHALLER);

    private static final Logger log = LoggerFactory.getLogger(ChalkAuthInterceptor.class);

    private final TokenSource tokens;
    private final AtomicBoolean warnedPlaintext = new AtomicBoolean();

    /**
     * Creates an interceptor; it does not fetch anything until a call starts.
     *
     * @param tokens where tokens come from; the interceptor does not close it
     */
    public ChalkAuthInterceptor(TokenSource tokens) {
        this.tokens = Objects.requireNonNull(tokens, "tokens");
    }

    /**
     * The token source this interceptor uses.
     *
     * @return the source given at construction
     */
    public TokenSource tokenSource() {
        return tokens;
    }

    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
        TokenCredentials credentials = new TokenCredentials();
        CallCredentials existing = options.getCredentials();
        CallOptions authenticated = options.withCallCredentials(
                existing == null ? credentials : new CompositeCallCredentials(existing, credentials));
        return new ForwardingClientCall.SimpleForwardingClientCall<>(next.newCall(method, authenticated)) {
            @Override
            public void start(Listener<R> listener, Metadata headers) {
                super.start(
                        new ForwardingClientCallListener.SimpleForwardingClientCallListener<>(listener) {
                            @Override
                            public void onClose(Status status, Metadata trailers) {
                                AccessToken sent = credentials.sent;
                                if (status.getCode() == Status.Code.UNAUTHENTICATED && sent != null) {
                                    tokens.invalidate(sent);
                                }
                                super.onClose(status, trailers);
                            }
                        },
                        headers);
            }
        };
    }

    @Override
    public String toString() {
        return "ChalkAuthInterceptor[" + tokens + "]";
    }

    /** Per call: fetches the token on the channel's executor and remembers which one was sent. */
    private final class TokenCredentials extends CallCredentials {
        private volatile AccessToken sent;

        @Override
        public void applyRequestMetadata(RequestInfo info, Executor appExecutor, MetadataApplier applier) {
            if (info.getSecurityLevel() == SecurityLevel.NONE
                    && !isLoopback(info.getAuthority())
                    && warnedPlaintext.compareAndSet(false, true)) {
                log.warn(
                        "sending Chalk credentials to {} without TLS; use an https:// address for remote servers",
                        info.getAuthority());
            }
            appExecutor.execute(() -> {
                AccessToken token;
                try {
                    token = tokens.token();
                } catch (ChalkComputeException e) {
                    applier.fail(Status.fromCode(e.statusCode())
                            .withDescription(e.serverMessage())
                            .withCause(e));
                    return;
                } catch (RuntimeException e) {
                    applier.fail(Status.UNAUTHENTICATED
                            .withDescription("cannot obtain a Chalk access token: "
                                    + e.getClass().getName())
                            .withCause(e));
                    return;
                }
                Metadata metadata = new Metadata();
                metadata.put(AUTHORIZATION, "Bearer " + token.value());
                token.environment().ifPresent(env -> metadata.put(ENVIRONMENT, env));
                sent = token;
                applier.apply(metadata);
            });
        }
    }

    private static final java.util.regex.Pattern LOOPBACK_V4 =
            java.util.regex.Pattern.compile("127\\.\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}");

    static boolean isLoopback(String authority) {
        if (authority == null) {
            return true;
        }
        String host = authority.toLowerCase(Locale.ROOT);
        int colon = host.lastIndexOf(':');
        if (colon > 0 && !host.endsWith("]")) {
            host = host.substring(0, colon);
        }
        // an address of 127.0.0.0/8, not any name that starts so: 127.attacker.example is another host
        return host.equals("localhost")
                || LOOPBACK_V4.matcher(host).matches()
                || host.equals("[::1]")
                || host.equals("::1")
                || host.isEmpty();
    }
}
