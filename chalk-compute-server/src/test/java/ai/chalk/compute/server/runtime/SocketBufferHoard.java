package ai.chalk.compute.server.runtime;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An attack on the host's TCP memory for the runtimes' security tests: socket buffers held on a sandbox's own
 * loopback by connections nobody reads. Needs perl in the sandbox.
 */
public final class SocketBufferHoard {

    private SocketBufferHoard() {}

    /**
     * Opens {@code $1} connections on the loopback and writes into them until {@code $2} bytes are held (nobody reads
     * them) or the kernel takes no more; prints {@code HELD <bytes> in <n> connections}.
     */
    public static final String HOARD = "perl -MIO::Socket::INET -e '"
            + "$| = 1; my ($conns, $target) = @ARGV;"
            + " my $l = IO::Socket::INET->new(LocalAddr => q(127.0.0.1), LocalPort => 0, Listen => 1024,"
            + " ReuseAddr => 1) or die qq(listen: $!\\n); my (@c, @s);"
            + " for (1 .. $conns) { my $c = IO::Socket::INET->new(PeerAddr => q(127.0.0.1),"
            + " PeerPort => $l->sockport) or last; my $s = $l->accept or last;"
            + " $c->blocking(0); push @c, $c; push @s, $s }"
            + " my $buf = q(x) x 65536; my ($total, $progress) = (0, 1);"
            + " while ($progress && $total < $target) { $progress = 0;"
            + " for my $c (@c) { my $n = syswrite($c, $buf);"
            + " if (defined $n && $n > 0) { $total += $n; $progress = 1 } last if $total >= $target } }"
            + " print qq(HELD $total in ), scalar(@c), qq( connections\\n)' ";

    /**
     * The most a hoard may be seen to hold under a group limit of {@code limit} bytes: the limit and a twentieth. The
     * kernel charges a socket's buffer past its group's limit when it must (the charge is forced and the group put
     * under pressure, rather than the write refused), so a hoard ends a little past the limit, by a few megabytes
     * (198.8 MB against 196.5 MB in one run), where without the limit it held three times as much (600 MB).
     */
    public static long bound(long limit) {
        return limit + limit / 20;
    }

    /** The bytes {@link #HOARD}'s output says it held, after checking that it opened every connection. */
    public static long held(String output, int connections) {
        String line = output.lines()
                .filter(l -> l.startsWith("HELD "))
                .findFirst()
                .orElseThrow(() -> new AssertionError(output));
        assertThat(line).as(output).endsWith(" in " + connections + " connections");
        return Long.parseLong(line.split(" ")[1]);
    }
}
