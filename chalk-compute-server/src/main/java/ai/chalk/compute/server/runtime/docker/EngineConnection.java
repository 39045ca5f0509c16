package ai.chalk.compute.server.runtime.docker;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.StandardProtocolFamily;
import java.net.URI;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;

/**
 * A raw connection to the Docker engine, for what docker-java's transport cannot do: an exec's attach stream whose
 * stdin can be half-closed (the engine then closes the process's stdin, which is how EOF reaches it), and a quick
 * ping. Reading and writing may happen on different threads at once.
 */
final class EngineConnection implements Closeable {

    private static final Pattern STATUS = Pattern.compile("HTTP/1\\.[01] (\\d{3})(.*)");
    private static final Pattern MESSAGE = Pattern.compile("\"message\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"");

    private final Closeable channel;
    private final InputStream in;
    private final OutputStream out;
    private final HalfCloser halfCloser;

    private interface HalfCloser {
        void shutdownOutput() throws IOException;
    }

    private EngineConnection(Closeable channel, InputStream in, OutputStream out, HalfCloser halfCloser) {
        this.channel = channel;
        this.in = new BufferedInputStream(in, 64 * 1024);
        this.out = out;
        this.halfCloser = halfCloser;
    }

    /** Where the engine listens: {@code unix:///path} or {@code tcp://host:port} (with TLS when a context is given). */
    record Address(URI uri, SSLContext tls) {
        @Override
        public String toString() {
            return uri.toString();
        }
    }

    static EngineConnection open(Address address) throws IOException {
        URI uri = address.uri();
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        switch (scheme) {
            case "unix" -> {
                SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
                try {
                    ch.connect(UnixDomainSocketAddress.of(uri.getPath()));
                } catch (IOException e) {
                    ch.close();
                    throw e;
                }
                return new EngineConnection(ch, new ChannelIn(ch), new ChannelOut(ch), ch::shutdownOutput);
            }
            case "tcp", "http", "https" -> {
                int port = uri.getPort() > 0 ? uri.getPort() : address.tls() != null ? 2376 : 2375;
                Socket s;
                if (address.tls() != null) {
                    SSLSocket ssl = (SSLSocket) address.tls().getSocketFactory().createSocket();
                    ssl.connect(new InetSocketAddress(uri.getHost(), port), 10_000);
                    ssl.startHandshake();
                    s = ssl;
                } else {
                    s = new Socket();
                    s.connect(new InetSocketAddress(uri.getHost(), port), 10_000);
                }
                s.setTcpNoDelay(true);
                Socket socket = s;
                return new EngineConnection(s, s.getInputStream(), s.getOutputStream(), socket::shutdownOutput);
            }
            default ->
                throw new IOException("unsupported Docker host " + uri + ": use unix:///path or tcp://host:port");
        }
    }

    /** Asks {@code GET /_ping}; returns normally when the engine answered OK. */
    static void ping(Address address) throws IOException {
        try (EngineConnection c = open(address)) {
            c.out.write(("GET /_ping HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            c.out.flush();
            Response r = c.readResponseHead();
            if (r.status != 200) {
                throw new IOException("the engine answered /_ping with HTTP " + r.status + r.reason);
            }
        }
    }

    /**
     * Null when the engine answered {@link #ping} within {@code timeout}, else why not: a missing socket or an engine
     * that hangs must not hold up a server choosing its runtime.
     */
    static String pingWithin(Address address, Duration timeout) {
        if (address.uri().getScheme() != null
                && address.uri().getScheme().equals("unix")
                && !Files.exists(Path.of(address.uri().getPath()))) {
            return address.uri().getPath() + " does not exist";
        }
        CompletableFuture<String> answer = CompletableFuture.supplyAsync(() -> {
            try {
                ping(address);
                return null;
            } catch (IOException e) {
                return e.getMessage() == null ? e.toString() : e.getMessage();
            }
        });
        try {
            return answer.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            answer.cancel(true);
            return "no answer within " + timeout.toSeconds() + " s";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        } catch (ExecutionException e) {
            return e.getCause().toString();
        }
    }

    /**
     * Starts an exec created earlier and attaches to it; on return the connection carries the process's stdin
     * (written to {@link #out()}) and its output (read from {@link #in()}: multiplexed frames without a TTY, raw
     * bytes with one).
     *
     * @throws EngineException when the engine refused (the exec or its container is gone, the container is paused)
     */
    static EngineConnection startExec(Address address, String execId, boolean tty) throws IOException {
        EngineConnection c = open(address);
        try {
            byte[] body = ("{\"Detach\":false,\"Tty\":" + tty + "}").getBytes(StandardCharsets.UTF_8);
            String head = "POST /exec/" + execId + "/start HTTP/1.1\r\n"
                    + "Host: docker\r\n"
                    + "Content-Type: application/json\r\n"
                    + "Connection: Upgrade\r\n"
                    + "Upgrade: tcp\r\n"
                    + "Content-Length: " + body.length + "\r\n\r\n";
            c.out.write(head.getBytes(StandardCharsets.US_ASCII));
            c.out.write(body);
            c.out.flush();
            Response r = c.readResponseHead();
            if (r.status != 101 && r.status != 200) {
                throw new EngineException(r.status, c.readError(r));
            }
            return c;
        } catch (IOException | RuntimeException e) {
            c.close();
            throw e;
        }
    }

    InputStream in() {
        return in;
    }

    OutputStream out() {
        return out;
    }

    /** Ends the stdin direction only: the engine closes the process's stdin; output keeps flowing. */
    void shutdownOutput() throws IOException {
        halfCloser.shutdownOutput();
    }

    @Override
    public void close() {
        try {
            channel.close();
        } catch (IOException e) {
            // closing anyway
        }
    }

    private record Response(int status, String reason, long contentLength) {}

    private Response readResponseHead() throws IOException {
        String statusLine = readLine();
        if (statusLine == null) {
            throw new IOException("the engine closed the connection without answering");
        }
        Matcher m = STATUS.matcher(statusLine);
        if (!m.matches()) {
            throw new IOException("unexpected answer from the engine: " + statusLine);
        }
        long length = -1;
        String line;
        while ((line = readLine()) != null && !line.isEmpty()) {
            int colon = line.indexOf(':');
            if (colon > 0 && line.substring(0, colon).trim().equalsIgnoreCase("Content-Length")) {
                length = Long.parseLong(line.substring(colon + 1).trim());
            }
        }
        return new Response(Integer.parseInt(m.group(1)), m.group(2), length);
    }

    /** The engine's error message of a refused request. */
    private String readError(Response r) throws IOException {
        byte[] body = r.contentLength >= 0
                ? in.readNBytes((int) Math.min(r.contentLength, 64 * 1024))
                : in.readNBytes(64 * 1024);
        String text = new String(body, StandardCharsets.UTF_8).trim();
        Matcher m = MESSAGE.matcher(text);
        return m.find()
                ? m.group(1).replace("\\\"", "\"").replace("\\\\", "\\")
                : text.isEmpty() ? "HTTP " + r.status + r.reason : text;
    }

    private String readLine() throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int b;
        while ((b = in.read()) >= 0) {
            if (b == '\n') {
                String s = line.toString(StandardCharsets.ISO_8859_1);
                return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
            }
            line.write(b);
            if (line.size() > 16 * 1024) {
                throw new IOException("the engine sent an overlong header line");
            }
        }
        return line.size() == 0 ? null : line.toString(StandardCharsets.ISO_8859_1);
    }

    /** The engine refused a request. */
    static final class EngineException extends IOException {
        final int status;

        EngineException(int status, String message) {
            super(message);
            this.status = status;
        }
    }

    /**
     * A blocking unix-domain channel read directly: {@code Channels.newInputStream} would hold the channel's
     * blocking lock while waiting for data, and so stall a concurrent stdin write.
     */
    private static final class ChannelIn extends InputStream {
        private final SocketChannel ch;

        ChannelIn(SocketChannel ch) {
            this.ch = ch;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            int n = read(one, 0, 1);
            return n < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (len == 0) {
                return 0;
            }
            int n;
            do {
                n = ch.read(ByteBuffer.wrap(b, off, len));
            } while (n == 0);
            return n;
        }

        @Override
        public void close() throws IOException {
            ch.close();
        }
    }

    private static final class ChannelOut extends OutputStream {
        private final SocketChannel ch;

        ChannelOut(SocketChannel ch) {
            this.ch = ch;
        }

        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            ByteBuffer buf = ByteBuffer.wrap(b, off, len);
            while (buf.hasRemaining()) {
                ch.write(buf);
            }
        }

        @Override
        public void close() throws IOException {
            ch.close();
        }
    }
}
