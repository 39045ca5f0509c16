package ai.chalk.compute.server.egress;

import java.net.InetAddress;
import java.util.List;
import java.util.Optional;

/**
 * Whether a connection to a host and port may go out, and where to.
 *
 * @param allowed   whether it may
 * @param addresses where it may connect, in the resolver's order (empty when refused)
 * @param entry     the {@code allowed_hosts} entry that allowed it by name; empty when a route did, or refused
 * @param reason    why it was refused (names the policy's fields, never a secret); empty when allowed
 */
public record Decision(boolean allowed, List<InetAddress> addresses, Optional<HostEntry> entry, String reason) {

    public Decision {
        addresses = List.copyOf(addresses);
    }

    static Decision allow(List<InetAddress> addresses, Optional<HostEntry> entry) {
        return new Decision(true, addresses, entry, "");
    }

    static Decision refuse(String reason) {
        return new Decision(false, List.of(), Optional.empty(), reason);
    }

    /** Whether requests on this connection are decrypted and rewritten by the host's rules. */
    public boolean intercepted() {
        return entry.map(HostEntry::intercepted).orElse(false);
    }
}
