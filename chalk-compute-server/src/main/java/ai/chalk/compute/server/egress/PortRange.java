package ai.chalk.compute.server.egress;

/**
 * Ports {@code start} to {@code end}, both included.
 *
 * @param start the first port (1 to 65535)
 * @param end   the last port, at least {@code start}
 */
public record PortRange(int start, int end) {

    public PortRange {
        if (start < 1 || end > 65535 || end < start) {
            throw new IllegalArgumentException(
                    "port range " + start + "-" + end + " is not within 1-65535 with start <= end");
        }
    }

    public boolean contains(int port) {
        return port >= start && port <= end;
    }

    @Override
    public String toString() {
        return start == end ? Integer.toString(start) : start + "-" + end;
    }
}
