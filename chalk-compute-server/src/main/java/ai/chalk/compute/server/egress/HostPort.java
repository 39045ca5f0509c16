package ai.chalk.compute.server.egress;

/**
 * A {@code host[:port]} as a Host header or a CONNECT target writes it; IPv6 literals in brackets.
 *
 * @param host the host, without brackets
 * @param port the port, or the default given when absent
 */
record HostPort(String host, int port) {

    /** Parses {@code text}; {@link IllegalArgumentException} when malformed. */
    static HostPort parse(String text, int defaultPort) {
        String host;
        String port = null;
        if (text.startsWith("[")) {
            int end = text.indexOf(']');
            if (end < 0) {
                throw new IllegalArgumentException("malformed host " + text);
            }
            host = text.substring(1, end);
            if (end + 1 < text.length()) {
                if (text.charAt(end + 1) != ':') {
                    throw new IllegalArgumentException("malformed host " + text);
                }
                port = text.substring(end + 2);
            }
        } else {
            int colon = text.lastIndexOf(':');
            if (colon >= 0 && text.indexOf(':') == colon) {
                host = text.substring(0, colon);
                port = text.substring(colon + 1);
            } else {
                host = text;
            }
        }
        if (host.isEmpty() || !host.matches("[A-Za-z0-9._:%-]+")) {
            throw new IllegalArgumentException("malformed host " + text);
        }
        int p = defaultPort;
        if (port != null) {
            try {
                p = Integer.parseInt(port);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("malformed port in " + text);
            }
            if (p < 1 || p > 65535) {
                throw new IllegalArgumentException("port out of range in " + text);
            }
        }
        return new HostPort(host, p);
    }
}
