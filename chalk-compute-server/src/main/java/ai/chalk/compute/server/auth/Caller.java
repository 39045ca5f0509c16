package ai.chalk.compute.server.auth;

import io.grpc.Context;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * Who is calling: the environment the call acts in and the identity it proved. Every resource belongs to one
 * environment; a service passes {@link #environment()} down so that a caller sees and touches only its own
 * environment's resources (another environment's ids answer NOT_FOUND, never revealing that they exist).
 *
 * <p>Set by the transport's interceptor before any service runs ({@link #KEY}); read with {@link #current()}.
 *
 * @param environment the environment's id, e.g. {@code default} or {@code dev}
 * @param subject     who proved it, for audit and for workload identity: {@code client:<id>},
 *                    {@code function:<name>}, {@code embedded} or {@code anonymous}
 * @param kind        how the identity was established
 */
public record Caller(String environment, String subject, Kind kind) {

    /** The environment of the embedded server, of {@code --auth none}, and of the first credential. */
    public static final String DEFAULT_ENVIRONMENT = "default";
    /** Where interceptors put the caller, for the services below them. */
    public static final Context.Key<Caller> KEY = Context.key("chalk-caller");

    private static final Pattern ENVIRONMENT = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.-]{0,62}");

    /** How a caller's identity was established. */
    public enum Kind {
        /** A client in the server's own JVM (in-process transport): trusted, any environment it names. */
        EMBEDDED,
        /** A TCP client of a server started without authentication ({@code --auth none}). */
        UNAUTHENTICATED,
        /** A client that presented a token from a client-credentials exchange. */
        CLIENT,
        /** Deployed code (a function's replica or a sandbox with workload identity) with its rotating token. */
        WORKLOAD
    }

    public Caller {
        checkEnvironment(environment);
        Objects.requireNonNull(subject, "subject");
        Objects.requireNonNull(kind, "kind");
    }

    /** A trusted caller acting in {@code environment} (the in-process transport, {@code --auth none}). */
    public static Caller trusted(String environment, Kind kind) {
        return new Caller(environment, kind == Kind.EMBEDDED ? "embedded" : "anonymous", kind);
    }

    /**
     * The caller of the call running on this thread.
     *
     * @throws IllegalStateException outside a call that passed an authenticating interceptor: a service wired
     *                               without one is a bug, and acting in some default environment would hide it
     */
    public static Caller current() {
        Caller c = KEY.get();
        if (c == null) {
            throw new IllegalStateException("no caller: the service was reached without an authenticating interceptor");
        }
        return c;
    }

    /**
     * Checks an environment id as a client names it (a header, a credential).
     *
     * @throws IllegalArgumentException saying what an id may contain
     */
    public static String checkEnvironment(String environment) {
        if (environment == null || !ENVIRONMENT.matcher(environment).matches()) {
            throw new IllegalArgumentException("invalid environment \"" + environment + "\": use 1 to 63 letters,"
                    + " digits, '.', '_' and '-', starting with a letter or digit");
        }
        return environment;
    }
}
