package ai.chalk.compute.server.egress;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.Locale;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;

/**
 * A small HTTPS/1.1 client over plain sockets for the proxy's streaming tests and benchmark, to {@link EgressWorld}'s
 * server: directly, through a CONNECT tunnel of the proxy for {@code other.test} (no rules), or intercepted for
 * {@code api.allowed.test} (a rule). Nothing in it but what the measurements need.
 *
 * @param tls    trusts the world's CA and the proxy's
 * @param server the world's address
 * @param proxy  the proxy's HTTP proxy port
 */
record RawHttps(SSLContext tls, InetAddress server, InetSocketAddress proxy) {

    /** How a request reaches the server. */
    enum Way {
        DIRECT,
        TUNNELLED,
        INTERCEPTED
    }

    /** A context trusting the world's CA (PEM) and the proxy's. */
    static SSLContext trusting(String worldCa, X509Certificate proxyCa) throws Exception {
        KeyStore store = KeyStore.getInstance("PKCS12");
        store.load(null, null);
        store.setCertificateEntry(
                "world",
                CertificateFactory.getInstance("X.509")
                        .generateCertificate(new ByteArrayInputStream(worldCa.getBytes(StandardCharsets.US_ASCII))));
        store.setCertificateEntry("proxy", proxyCa);
        TrustManagerFactory f = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        f.init(store);
        SSLContext c = SSLContext.getInstance("TLS");
        c.init(null, f.getTrustManagers(), null);
        return c;
    }

    private String host(Way way) {
        return way == Way.INTERCEPTED ? "api.allowed.test" : "other.test";
    }

    private SSLSocket open(Way way) throws IOException {
        String host = host(way);
        Socket tcp = new Socket();
        tcp.setTcpNoDelay(true);
        if (way == Way.DIRECT) {
            tcp.connect(new InetSocketAddress(server, 443), 5000);
        } else {
            tcp.connect(proxy, 5000);
            OutputStream out = tcp.getOutputStream();
            out.write(("CONNECT " + host + ":443 HTTP/1.1\r\nHost: " + host + ":443\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            String head = headers(tcp.getInputStream());
            if (!head.startsWith("HTTP/1.1 200")) {
                throw new IOException("CONNECT refused: " + head);
            }
        }
        SSLSocket s = (SSLSocket) tls.getSocketFactory().createSocket(tcp, host, 443, true);
        SSLParameters params = s.getSSLParameters();
        params.setEndpointIdentificationAlgorithm("HTTPS");
        s.setSSLParameters(params);
        s.startHandshake();
        return s;
    }

    /** One request on a connection of its own, from connect to the last byte; nanoseconds. */
    long newConnection(Way way) throws IOException {
        long t = System.nanoTime();
        try (SSLSocket s = open(way)) {
            get(s, host(way), "/bench", true);
        }
        return System.nanoTime() - t;
    }

    long[] keptAlive(Way way, int n) throws IOException {
        long[] times = new long[n];
        try (SSLSocket s = open(way)) {
            get(s, host(way), "/bench", false);
            for (int i = 0; i < n; i++) {
                long t = System.nanoTime();
                get(s, host(way), "/bench", false);
                times[i] = System.nanoTime() - t;
            }
        }
        return times;
    }

    /** Megabytes per second of one download of {@code bytes}. */
    double download(Way way, long bytes) throws IOException {
        try (SSLSocket s = open(way)) {
            long t = System.nanoTime();
            long got = get(s, host(way), "/bytes?n=" + bytes, true);
            assertThat(got).isEqualTo(bytes);
            return bytes / 1e6 / ((System.nanoTime() - t) / 1e9);
        }
    }

    /** Sends a GET and reads the whole response; returns the body's length. */
    private static long get(SSLSocket s, String host, String path, boolean close) throws IOException {
        OutputStream out = s.getOutputStream();
        out.write(("GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n" + (close ? "Connection: close\r\n" : "")
                        + "\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        out.flush();
        InputStream in = s.getInputStream();
        String head = headers(in);
        long length = -1;
        for (String line : head.split("\r\n")) {
            if (line.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
                length = Long.parseLong(line.substring(15).strip());
            }
        }
        if (!head.startsWith("HTTP/1.1 200") || length < 0) {
            throw new IOException("unexpected response: " + head);
        }
        byte[] buf = new byte[1 << 16];
        long left = length;
        while (left > 0) {
            int n = in.read(buf, 0, (int) Math.min(buf.length, left));
            if (n < 0) {
                throw new IOException("the response ended early");
            }
            left -= n;
        }
        return length;
    }

    private static String headers(InputStream in) throws IOException {
        StringBuilder s = new StringBuilder();
        int b;
        while ((b = in.read()) >= 0) {
            s.append((char) b);
            if (s.length() >= 4 && s.substring(s.length() - 4).equals("\r\n\r\n")) {
                return s.toString();
            }
        }
        throw new IOException("the connection closed before the headers ended: " + s);
    }

    /** Megabytes per second of one upload of {@code bytes} (a POST the server reads whole). */
    double upload(Way way, int bytes) throws IOException {
        try (SSLSocket s = open(way)) {
            long t = System.nanoTime();
            OutputStream out = s.getOutputStream();
            out.write(("POST /upload HTTP/1.1\r\nHost: " + host(way) + "\r\nContent-Length: " + bytes
                            + "\r\nConnection: close\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            byte[] chunk = new byte[1 << 16];
            java.util.Arrays.fill(chunk, (byte) 'u');
            for (int left = bytes; left > 0; left -= chunk.length) {
                out.write(chunk, 0, Math.min(chunk.length, left));
            }
            out.flush();
            String head = headers(s.getInputStream());
            assertThat(head).startsWith("HTTP/1.1 200");
            return bytes / 1e6 / ((System.nanoTime() - t) / 1e9);
        }
    }
}
