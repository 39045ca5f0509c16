package ai.chalk.compute.server.http;

import ai.chalk.compute.server.blob.BlobDigest;
import ai.chalk.compute.server.blob.BlobStore;
import ai.chalk.compute.server.blob.BlobStore.BlobMismatchException;
import ai.chalk.compute.server.blob.DiskFullException;
import ai.chalk.compute.server.http.ByteRange.Unsatisfiable;
import ai.chalk.compute.server.http.LinkSigner.LinkRefusedException;
import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.StandardOpenOption;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Moves bulk bytes over the server's HTTP port with signed links: {@code GET} (and {@code HEAD}, with single byte
 * ranges) of a blob under a file name, {@code PUT} of one object to an {@link UploadTarget}, streamed into the blob
 * store with a fixed buffer whatever the size. A link grants one method on one object until it expires; whoever holds
 * it may use it (curl included), so a service hands a link out only to a caller allowed the object.
 *
 * <pre>{@code
 * String url = transfers.downloadUrl(digest, "part-0.parquet", Duration.ofHours(1));
 * transfers.uploadTarget("dataset", target);
 * String put = transfers.uploadUrl("dataset", objectId, Duration.ofHours(1));
 * }</pre>
 */
public final class Transfers {

    /** Where every transfer is served. */
    public static final String PREFIX = "/transfers/";
    /** How long links live unless a service says otherwise. */
    public static final Duration DEFAULT_TTL = Duration.ofHours(1);

    private static final Logger log = LoggerFactory.getLogger(Transfers.class);
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,199}");
    private static final Pattern TARGET = Pattern.compile("[a-z][a-z0-9-]{0,31}");
    private static final Pattern OBJECT = Pattern.compile("[A-Za-z0-9_-]{1,128}");
    private static final Pattern HEX = Pattern.compile("[0-9a-f]{64}");
    private static final int BUFFER = 64 * 1024;
    /** The most of a refused upload's body read to deliver the refusal; past it the connection is just closed. */
    private static final long DISCARD_LIMIT = 64L << 20;
    /** HTTP's answer to an upload the server's disk has no room for (RFC 4918). */
    private static final int INSUFFICIENT_STORAGE = 507;

    private final BlobStore blobs;
    private final LinkSigner signer;
    private final Clock clock;
    private final Supplier<String> baseUrl;
    private final Map<String, UploadTarget> targets = new ConcurrentHashMap<>();
    /** The objects ({@code target/object}) a PUT is storing now: one at a time each. */
    private final Set<String> receiving = ConcurrentHashMap.newKeySet();

    private final Duration ttl;
    private volatile @Nullable HttpPort port;

    /**
     * Transfers whose links live {@link #DEFAULT_TTL} unless a service says otherwise.
     *
     * @param baseUrl the HTTP port's URL, asked when a link is made (the port opens after the services are built)
     */
    public Transfers(BlobStore blobs, LinkSigner signer, Clock clock, Supplier<String> baseUrl) {
        this(blobs, signer, clock, baseUrl, DEFAULT_TTL);
    }

    /**
     * @param baseUrl the HTTP port's URL, asked when a link is made (the port opens after the services are built)
     * @param ttl     how long services make their links live ({@link #ttl()})
     */
    public Transfers(BlobStore blobs, LinkSigner signer, Clock clock, Supplier<String> baseUrl, Duration ttl) {
        if (ttl.isNegative() || ttl.isZero()) {
            throw new IllegalArgumentException("a link's lifetime must be positive, got " + ttl);
        }
        this.blobs = blobs;
        this.signer = signer;
        this.clock = clock;
        this.baseUrl = baseUrl;
        this.ttl = ttl;
    }

    /** How long the links services hand out live (the server's setting). */
    public Duration ttl() {
        return ttl;
    }

    /**
     * A link that downloads the blob {@code digest} as {@code fileName} ({@code GET}, {@code HEAD}, byte ranges) for
     * {@code ttl}.
     *
     * @throws IllegalArgumentException when the file name has characters other than letters, digits, '.', '_', '-'
     */
    public String downloadUrl(BlobDigest digest, String fileName, Duration ttl) {
        if (!NAME.matcher(fileName).matches()) {
            throw new IllegalArgumentException("a download's file name is 1 to 200 letters, digits, '.', '_' and '-',"
                    + " starting with a letter or digit; got \"" + fileName + "\"");
        }
        return link("GET", PREFIX + "blobs/" + digest.hex() + "/" + fileName, ttl);
    }

    /**
     * When links made now with {@code ttl} expire (what a service tells its clients): links carry whole seconds, so
     * the end of {@code ttl} rounded up.
     */
    public Instant expiry(Duration ttl) {
        Instant end = clock.instant().plus(ttl);
        Instant whole = end.truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
        return whole.equals(end) ? whole : whole.plusSeconds(1);
    }

    /**
     * A link that uploads the object {@code objectId} of {@code target} ({@code PUT}) for {@code ttl}.
     *
     * @throws IllegalArgumentException for a target or object id outside their forms, or a target not registered
     */
    public String uploadUrl(String target, String objectId, Duration ttl) {
        if (!targets.containsKey(target)) {
            throw new IllegalArgumentException("no upload target \"" + target + "\" is registered");
        }
        if (!OBJECT.matcher(objectId).matches()) {
            throw new IllegalArgumentException(
                    "an object id is 1 to 128 letters, digits, '_' and '-'; got \"" + objectId + "\"");
        }
        return link("PUT", PREFIX + "uploads/" + target + "/" + objectId, ttl);
    }

    /** Sends the uploads to {@code target} ({@code [a-z][a-z0-9-]*}) to {@code handler}. */
    public void uploadTarget(String target, UploadTarget handler) {
        if (!TARGET.matcher(target).matches()) {
            throw new IllegalArgumentException("an upload target is a lowercase word, got \"" + target + "\"");
        }
        if (targets.putIfAbsent(target, handler) != null) {
            throw new IllegalStateException("upload target \"" + target + "\" is registered already");
        }
    }

    private String link(String method, String path, Duration ttl) {
        return baseUrl.get() + path + "?" + signer.sign(method, path, expiry(ttl));
    }

    /** Serves the transfers on {@code port}. */
    public void serveOn(HttpPort port) {
        this.port = port;
        port.route(PREFIX, this::handle);
    }

    private HttpPort port() {
        HttpPort served = port;
        if (served == null) {
            throw new IllegalStateException("a transfer is handled only on the port it is served on");
        }
        return served;
    }

    private void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            String method = exchange.getRequestMethod();
            String path = exchange.getRequestURI().getRawPath();
            String[] parts = path.substring(PREFIX.length()).split("/", -1);
            boolean download = parts.length == 3 && parts[0].equals("blobs");
            boolean upload = parts.length == 3 && parts[0].equals("uploads");
            if (!download && !upload) {
                HttpPort.send(exchange, 404, "text/plain", "no transfer at " + path + "\n");
                return;
            }
            String allowed = download ? "GET, HEAD" : "PUT";
            if (!(download ? Set.of("GET", "HEAD") : Set.of("PUT")).contains(method)) {
                exchange.getResponseHeaders().set("Allow", allowed);
                HttpPort.send(exchange, 405, "text/plain", "this link is for " + allowed + ", not " + method + "\n");
                return;
            }
            try {
                signer.check(method, path, exchange.getRequestURI().getRawQuery());
            } catch (LinkRefusedException e) {
                HttpPort.send(exchange, 403, "text/plain", e.getMessage() + "\n");
                return;
            }
            // a holder of the link: its bytes take what they take while they move (anyone else is cut off at the
            // port's deadline), unless the transfers under way hold all the threads they may
            try {
                port().granted();
            } catch (ExchangeThreads.PortBusyException e) {
                // an upload's body is not read first, as for other refusals: the thread is one of those kept for
                // the rest, and the connection closes after the answer
                exchange.getResponseHeaders().set("Retry-After", "5");
                exchange.getResponseHeaders().set("Connection", "close");
                HttpPort.send(exchange, 503, "text/plain", e.getMessage() + "\n");
                return;
            }
            if (download) {
                serveBlob(exchange, parts[1], parts[2]);
            } else {
                receive(exchange, parts[1], parts[2]);
            }
        } catch (IOException e) {
            // the client went away mid-transfer: nothing to answer
            log.debug(
                    "transfer {} {} ended: {}",
                    exchange.getRequestMethod(),
                    exchange.getRequestURI().getPath(),
                    e);
        }
    }

    private void serveBlob(HttpExchange exchange, String hex, String fileName) throws IOException {
        if (!HEX.matcher(hex).matches()) {
            HttpPort.send(exchange, 404, "text/plain", "no such object\n");
            return;
        }
        BlobDigest digest = new BlobDigest(hex);
        FileChannel file;
        try {
            file = FileChannel.open(blobs.path(digest), StandardOpenOption.READ);
        } catch (NoSuchFileException e) {
            HttpPort.send(exchange, 410, "text/plain", "this object no longer exists on the server (it was deleted)\n");
            return;
        }
        try (file) {
            long size = file.size();
            var headers = exchange.getResponseHeaders();
            headers.set("Accept-Ranges", "bytes");
            headers.set("Content-Disposition", "attachment; filename=\"" + fileName + "\"");
            headers.set("ETag", "\"" + hex + "\"");
            headers.set(
                    "Content-Type",
                    fileName.endsWith(".parquet") ? "application/vnd.apache.parquet" : "application/octet-stream");
            Optional<ByteRange> range;
            try {
                range = ByteRange.parse(exchange.getRequestHeaders().getFirst("Range"), size);
            } catch (Unsatisfiable e) {
                headers.set("Content-Range", "bytes */" + size);
                HttpPort.send(
                        exchange, 416, "text/plain", "the range asked for lies past the object's " + size + " bytes\n");
                return;
            }
            long first = range.map(ByteRange::first).orElse(0L);
            long length = range.map(ByteRange::length).orElse(size);
            range.ifPresent(r -> headers.set("Content-Range", "bytes " + r.first() + "-" + r.last() + "/" + size));
            int status = range.isPresent() ? 206 : 200;
            if (exchange.getRequestMethod().equals("HEAD") || length == 0) {
                headers.set("Content-Length", Long.toString(length));
                exchange.sendResponseHeaders(status, -1);
                return;
            }
            exchange.sendResponseHeaders(status, length);
            try (OutputStream out = exchange.getResponseBody()) {
                file.position(first);
                InputStream in = Channels.newInputStream(file);
                byte[] buffer = new byte[BUFFER];
                long left = length;
                while (left > 0) {
                    int n = in.read(buffer, 0, (int) Math.min(buffer.length, left));
                    if (n < 0) {
                        throw new IOException("the object ended early (" + (length - left) + " of " + length + ")");
                    }
                    out.write(buffer, 0, n);
                    port().progressed();
                    left -= n;
                }
            }
        }
    }

    /**
     * Answers an upload refused before its bytes were read. The body is read and dropped first (up to a limit): a
     * server that closes a connection with unread bytes makes the client's TCP stack reset it, and the client never
     * sees the answer that says why.
     */
    private static void refuseUpload(HttpExchange exchange, int status, String message) throws IOException {
        discardBody(exchange);
        HttpPort.send(exchange, status, "text/plain", message + "\n");
    }

    private static void discardBody(HttpExchange exchange) throws IOException {
        byte[] buffer = new byte[BUFFER];
        long left = DISCARD_LIMIT;
        try (InputStream in = exchange.getRequestBody()) {
            for (int n; left > 0 && (n = in.read(buffer)) >= 0; ) {
                left -= n;
            }
        }
    }

    private void receive(HttpExchange exchange, String targetName, String objectId) throws IOException {
        UploadTarget target = targets.get(targetName);
        if (target == null || !OBJECT.matcher(objectId).matches()) {
            refuseUpload(exchange, 404, "no upload target for this link");
            return;
        }
        // an object is claimed only once its bytes are stored: PUTs of one link at once would each store a blob (all
        // but one left behind, referred to by nothing) and hold a transfer thread each
        String claim = targetName + "/" + objectId;
        if (!receiving.add(claim)) {
            refuseUpload(exchange, 409, "another upload of this object is under way; wait for its answer");
            return;
        }
        try {
            receive(exchange, target, objectId);
        } finally {
            receiving.remove(claim);
        }
    }

    private void receive(HttpExchange exchange, UploadTarget target, String objectId) throws IOException {
        UploadTarget.Expected expected;
        try {
            expected = target.expect(objectId);
        } catch (TransferRefusedException e) {
            refuseUpload(exchange, e.status(), e.getMessage());
            return;
        }
        String announced = exchange.getRequestHeaders().getFirst("Content-Length");
        if (announced != null && !announced.trim().equals(Long.toString(expected.size()))) {
            discardBody(exchange);
            HttpPort.send(
                    exchange,
                    400,
                    "text/plain",
                    "this object was announced as " + expected.size() + " bytes, but the request carries " + announced
                            + "; ask for an upload link with the right content size\n");
            return;
        }
        BlobDigest stored;
        long written;
        BlobStore.Upload reserved;
        try {
            reserved = blobs.begin(
                    expected.size(), expected.environment(), expected.digest().orElse(null));
        } catch (DiskFullException e) {
            refuseUpload(exchange, INSUFFICIENT_STORAGE, e.getMessage());
            return;
        }
        try (BlobStore.Upload upload = reserved;
                InputStream in = exchange.getRequestBody()) {
            byte[] buffer = new byte[BUFFER];
            for (int n; (n = in.read(buffer)) >= 0; ) {
                if (upload.written() + n > expected.size()) {
                    discardBody(exchange);
                    HttpPort.send(
                            exchange,
                            413,
                            "text/plain",
                            "the upload is longer than the " + expected.size() + " bytes announced for it\n");
                    return;
                }
                port().progressed();
                try {
                    upload.write(buffer, 0, n);
                } catch (DiskFullException e) {
                    // read (and drop) what the client still sends, so that it gets the answer rather than a reset
                    refuseUpload(exchange, INSUFFICIENT_STORAGE, e.getMessage());
                    return;
                }
            }
            written = upload.written();
            if (written != expected.size()) {
                HttpPort.send(
                        exchange,
                        400,
                        "text/plain",
                        "the upload ended after " + written + " of the " + expected.size() + " bytes announced\n");
                return;
            }
            if (expected.digest().isPresent()) {
                upload.commit(expected.digest().get(), written);
                stored = expected.digest().get();
            } else {
                stored = upload.commit();
            }
        } catch (BlobMismatchException e) {
            HttpPort.send(exchange, 400, "text/plain", e.getMessage() + "\n");
            return;
        }
        try {
            target.stored(objectId, stored, written);
        } catch (TransferRefusedException e) {
            HttpPort.send(exchange, e.status(), "text/plain", e.getMessage() + "\n");
            return;
        }
        exchange.getResponseHeaders().set("ETag", "\"" + stored.hex() + "\"");
        HttpPort.send(exchange, 200, "text/plain", "stored " + written + " bytes as " + stored + "\n");
    }
}
