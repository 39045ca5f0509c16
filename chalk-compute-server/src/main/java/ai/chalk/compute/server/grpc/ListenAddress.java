package ai.chalk.compute.server.grpc;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Optional;

/**
 * Whether the server may listen on an address. Without authentication ({@code --auth none}) whoever reaches the port
 * controls every sandbox, so that is allowed on loopback only (127.0.0.0/8, ::1, localhost), with a warning. With
 * authentication any address may be bound; without TLS tokens then cross the network in the clear, which is warned
 * about too.
 */
public final class ListenAddress {

    private ListenAddress() {}

    /** Whether {@code host} names this machine's loopback only. */
    public static boolean isLoopback(String host) {
        try {
            for (InetAddress address : InetAddress.getAllByName(host)) {
                if (!address.isLoopbackAddress()) {
                    return false;
                }
            }
            return true;
        } catch (UnknownHostException e) {
            return false;
        }
    }

    /**
     * Checks that the server may listen on {@code host}.
     *
     * @param authenticated whether TCP callers must show a token
     * @param tls           whether the port is served with TLS
     * @return the warning to log, if any
     * @throws IllegalArgumentException for a non-loopback host without authentication, saying what to do
     */
    public static Optional<String> check(String host, int port, boolean authenticated, boolean tls) {
        boolean loopback = isLoopback(host);
        if (!authenticated && !loopback) {
            throw new IllegalArgumentException("refusing to listen on " + host + " without authentication (--auth"
                    + " none): anyone who reaches the port could run commands in every sandbox. Leave authentication on"
                    + " (the default: clients exchange a credential for a token), or listen on 127.0.0.1");
        }
        if (!authenticated) {
            return Optional.of("Listening on " + host + ":" + port + " WITHOUT AUTHENTICATION (--auth none): every"
                    + " user and process of this machine can create, list and terminate every sandbox, run any command"
                    + " in any of them, read and write every volume, deploy and call functions");
        }
        if (!loopback && !tls) {
            return Optional.of("Listening on " + host + ":" + port + " without TLS: client secrets and tokens cross"
                    + " the network in the clear; serve the port with --tls-cert and --tls-key, or keep it on a"
                    + " private network");
        }
        return Optional.empty();
    }
}
