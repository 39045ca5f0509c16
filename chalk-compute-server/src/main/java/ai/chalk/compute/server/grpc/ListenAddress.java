package ai.chalk.compute.server.grpc;

import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * Whether the server may listen on an address. The server has no authentication yet, so whoever reaches
 * its port controls every sandbox: it binds to loopback (127.0.0.0/8, ::1, localhost) unless the operator
 * says, with {@code insecureListen}, that something else keeps the port to trusted clients.
 */
public final class ListenAddress {

    private ListenAddress() {
    }

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
     * @return the warning to log when it listens beyond loopback with {@code insecureListen}, else null
     * @throws IllegalArgumentException for a non-loopback host without {@code insecureListen}, saying what to do
     */
    public static String check(String host, int port, boolean insecureListen) {
        if (isLoopback(host)) {
            return null;
        }
        if (!insecureListen) {
            throw new IllegalArgumentException("refusing to listen on " + host + ": the server has no authentication"
                    + " yet, so anyone who reaches the port could run commands in every sandbox. Listen on 127.0.0.1"
                    + " (the default) and reach it through an SSH tunnel or an authenticating proxy, or pass"
                    + " --insecure-listen (ComputeServer.Builder.insecureListen) if a firewall or private network"
                    + " keeps the port to trusted clients");
        }
        return "Listening on " + host + ":" + port + " WITHOUT AUTHENTICATION (--insecure-listen): anyone who can"
                + " reach this port can create, list and terminate every sandbox, run any command in any of them,"
                + " read and write every volume, snapshot and image, deploy and call functions, and list every"
                + " service through reflection. Keep the port behind a firewall or a private network";
    }
}
