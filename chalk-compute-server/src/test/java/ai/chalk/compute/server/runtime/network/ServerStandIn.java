package ai.chalk.compute.server.runtime.network;

import java.nio.file.Path;

/**
 * A server stand-in for {@link SandboxNetworkSecurityTest}: attaches egress to the pid given, prints slirp4netns' pid
 * and waits to be killed.
 */
public final class ServerStandIn {

    private ServerStandIn() {}

    public static void main(String[] args) throws Exception {
        Egress egress =
                SandboxNetwork.attachOnThisHost(Path.of(args[0]), Long.parseLong(args[1]), ProcessBuilder::start);
        System.out.println(egress.slirpPid());
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
