package ai.chalk.compute.server.http;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.blob.BlobDigest;
import ai.chalk.compute.server.blob.BlobStore;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.HexFormat;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Signed links over a real HTTP port on loopback: downloads with ranges, uploads streamed to the blob store. */
@Tag("alone")
class TransfersTest {

    @TempDir
    Path dir;

    private final MutableClock clock = new MutableClock(Instant.parse("2026-12-02T12:00:00Z"));
    private final HttpClient http = HttpClient.newHttpClient();
    private final Map<String, Long> announced = new ConcurrentHashMap<>();
    private final Map<String, BlobDigest> received = new ConcurrentHashMap<>();
    private HttpPort port;
    private BlobStore blobs;
    private Transfers transfers;

    @BeforeEach
    void open() throws IOException {
        port = HttpPort.open("127.0.0.1", 0);
        blobs = new BlobStore(dir.resolve("blobs"));
        transfers = new Transfers(blobs, LinkSigner.load(dir, clock), clock, port::url);
        transfers.uploadTarget("test", new UploadTarget() {
            @Override
            public Expected expect(String objectId) throws TransferRefusedException {
                Long size = announced.get(objectId);
                if (size == null) {
                    throw new TransferRefusedException(404, "no object " + objectId + " awaits an upload");
                }
                if (received.containsKey(objectId)) {
                    throw new TransferRefusedException(409, "object " + objectId + " was uploaded already");
                }
                return new Expected(size, Optional.empty(), "test-env");
            }

            @Override
            public void stored(String objectId, BlobDigest digest, long size) {
                received.put(objectId, digest);
            }
        });
        transfers.serveOn(port);
    }

    @AfterEach
    void close() {
        port.close();
    }

    @Test
    void aDownloadLinkServesTheWholeBlobAndSingleRangesLikeAFileServer() throws Exception {
        byte[] bytes = "0123456789abcdefghij".getBytes(StandardCharsets.US_ASCII);
        BlobDigest digest = blobs.put(bytes);
        String url = transfers.downloadUrl(digest, "part-0.parquet", Duration.ofMinutes(5));

        HttpResponse<byte[]> whole = get(url, null);
        assertThat(whole.statusCode()).isEqualTo(200);
        assertThat(whole.body()).isEqualTo(bytes);
        assertThat(whole.headers().firstValue("Accept-Ranges")).contains("bytes");
        assertThat(whole.headers().firstValue("Content-Type")).contains("application/vnd.apache.parquet");

        HttpResponse<byte[]> middle = get(url, "bytes=5-9");
        assertThat(middle.statusCode()).isEqualTo(206);
        assertThat(new String(middle.body(), StandardCharsets.US_ASCII)).isEqualTo("56789");
        assertThat(middle.headers().firstValue("Content-Range")).contains("bytes 5-9/20");

        assertThat(new String(get(url, "bytes=-3").body(), StandardCharsets.US_ASCII))
                .isEqualTo("hij");
        assertThat(new String(get(url, "bytes=17-").body(), StandardCharsets.US_ASCII))
                .isEqualTo("hij");
        HttpResponse<byte[]> past = get(url, "bytes=20-");
        assertThat(past.statusCode()).isEqualTo(416);
        assertThat(past.headers().firstValue("Content-Range")).contains("bytes */20");

        HttpResponse<Void> head = http.send(
                HttpRequest.newBuilder(URI.create(url))
                        .method("HEAD", HttpRequest.BodyPublishers.noBody())
                        .build(),
                HttpResponse.BodyHandlers.discarding());
        assertThat(head.statusCode()).isEqualTo(200);
        assertThat(head.headers().firstValue("Content-Length")).contains("20");
    }

    @Test
    void curlDownloadsARangeOfALinkAsIs() throws Exception {
        BlobDigest digest = blobs.put("hello, range requests".getBytes(StandardCharsets.US_ASCII));
        String url = transfers.downloadUrl(digest, "greeting.txt", Duration.ofMinutes(5));
        Process curl = new ProcessBuilder("curl", "-s", "-f", "-r", "7-11", url).start();
        assertThat(curl.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(new String(curl.getInputStream().readAllBytes(), StandardCharsets.US_ASCII))
                .isEqualTo("range");
        assertThat(curl.exitValue()).isZero();
    }

    @Test
    void anExpiredLinkIsRefusedWith403SayingWhen() throws Exception {
        BlobDigest digest = blobs.put(new byte[] {1, 2, 3});
        String url = transfers.downloadUrl(digest, "x.bin", Duration.ofMinutes(5));
        clock.advance(Duration.ofMinutes(5));
        HttpResponse<byte[]> response = get(url, null);
        assertThat(response.statusCode()).isEqualTo(403);
        assertThat(new String(response.body(), StandardCharsets.UTF_8))
                .contains("this link expired at 2026-12-02T12:05:00Z")
                .contains("ask the server for a new link");
    }

    @Test
    void aTamperedLinkIsRefusedWith403WhateverWasChanged() throws Exception {
        BlobDigest mine = blobs.put("mine".getBytes(StandardCharsets.US_ASCII));
        BlobDigest other = blobs.put("someone else's".getBytes(StandardCharsets.US_ASCII));
        String url = transfers.downloadUrl(mine, "mine.bin", Duration.ofMinutes(5));
        String later = url.replaceAll("X-Chalk-Expires=(\\d+)", "X-Chalk-Expires=99999999999");
        String otherObject = url.replace(mine.hex(), other.hex());
        String otherName = url.replace("mine.bin", "mine.csv");
        String unsigned = url.substring(0, url.indexOf('?'));
        String sig = url.substring(url.indexOf("X-Chalk-Signature=") + "X-Chalk-Signature=".length());
        String flipped = url.replace(sig, (sig.charAt(0) == 'A' ? "B" : "A") + sig.substring(1));
        for (String tampered : new String[] {later, otherObject, otherName, flipped}) {
            HttpResponse<byte[]> response = get(tampered, null);
            assertThat(response.statusCode()).as(tampered).isEqualTo(403);
            assertThat(new String(response.body(), StandardCharsets.UTF_8)).contains("signature does not match");
        }
        HttpResponse<byte[]> bare = get(unsigned, null);
        assertThat(bare.statusCode()).isEqualTo(403);
        assertThat(new String(bare.body(), StandardCharsets.UTF_8)).contains("not a signed link");
        assertThat(get(url, null).statusCode()).isEqualTo(200);
    }

    @Test
    void aDownloadLinkCannotBeUsedToUploadNorAnUploadLinkToDownload() throws Exception {
        BlobDigest digest = blobs.put(new byte[] {1});
        String download = transfers.downloadUrl(digest, "x.bin", Duration.ofMinutes(5));
        assertThat(put(download, new byte[] {2}).statusCode()).isEqualTo(405);
        announced.put("obj-1", 1L);
        String upload = transfers.uploadUrl("test", "obj-1", Duration.ofMinutes(5));
        assertThat(get(upload, null).statusCode()).isEqualTo(405);
        // the same path signed for GET does not grant PUT
        String forged = upload.replaceAll("\\?.*", "?" + download.substring(download.indexOf('?') + 1));
        assertThat(put(forged, new byte[] {2}).statusCode()).isEqualTo(403);
    }

    @Test
    void anUploadStreamsIntoTheBlobStoreAndTellsItsTarget() throws Exception {
        byte[] bytes = new byte[3 * 1024 * 1024 + 17];
        new Random(7).nextBytes(bytes);
        announced.put("obj-2", (long) bytes.length);
        HttpResponse<byte[]> response = put(transfers.uploadUrl("test", "obj-2", Duration.ofMinutes(5)), bytes);
        assertThat(response.statusCode()).isEqualTo(200);
        String hex =
                HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        assertThat(received.get("obj-2")).isEqualTo(new BlobDigest(hex));
        assertThat(Files.readAllBytes(blobs.path(new BlobDigest(hex)))).isEqualTo(bytes);

        HttpResponse<byte[]> again = put(transfers.uploadUrl("test", "obj-2", Duration.ofMinutes(5)), bytes);
        assertThat(again.statusCode()).isEqualTo(409);
        assertThat(new String(again.body(), StandardCharsets.UTF_8)).contains("uploaded already");
    }

    /**
     * A link's object was claimed only once its bytes were stored, so PUTs of one link at once each stored a blob (all
     * but one referred to by nothing, kept forever) and each held a transfer thread. A second PUT while one is under
     * way is now refused with 409; the first one stores the object, once.
     */
    @Test
    void aSecondUploadOfAnObjectWhileOneIsUnderWayIs409() throws Exception {
        byte[] bytes = new byte[1 << 20];
        new Random(11).nextBytes(bytes);
        announced.put("obj-4", (long) bytes.length);
        String url = transfers.uploadUrl("test", "obj-4", Duration.ofMinutes(5));
        java.io.PipedOutputStream body = new java.io.PipedOutputStream();
        java.io.PipedInputStream source = new java.io.PipedInputStream(body, 64 * 1024);
        var first = http.sendAsync(
                HttpRequest.newBuilder(URI.create(url))
                        .PUT(HttpRequest.BodyPublishers.fromPublisher(
                                HttpRequest.BodyPublishers.ofInputStream(() -> source), bytes.length))
                        .build(),
                HttpResponse.BodyHandlers.ofByteArray());
        body.write(bytes, 0, 256 * 1024);
        Path incoming = dir.resolve("blobs").resolve("incoming");
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> {
            try (var files = Files.list(incoming)) {
                return files.findAny().isPresent();
            }
        });

        HttpResponse<byte[]> second = put(url, bytes);
        assertThat(second.statusCode()).isEqualTo(409);
        assertThat(new String(second.body(), StandardCharsets.UTF_8)).contains("another upload of this object");

        body.write(bytes, 256 * 1024, bytes.length - 256 * 1024);
        body.close();
        assertThat(first.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        assertThat(received).containsKey("obj-4");
        assertThat(blobs.digests()).hasSize(1);
    }

    /**
     * An upload the server's disk has no room for (past what it keeps free for itself) is answered 507 with why, and
     * nothing of it is stored: uploads cannot fill the disk.
     */
    @Test
    void anUploadTheDiskHasNoRoomForIs507AndLeavesNothing() throws Exception {
        long free = Files.getFileStore(dir).getUsableSpace();
        BlobStore full = new BlobStore(dir.resolve("full-blobs"), free + (1L << 30));
        HttpPort other = HttpPort.open("127.0.0.1", 0);
        try {
            Transfers onFull = new Transfers(full, LinkSigner.load(dir, clock), clock, other::url);
            Map<String, BlobDigest> stored = new ConcurrentHashMap<>();
            onFull.uploadTarget("test", new UploadTarget() {
                @Override
                public Expected expect(String objectId) {
                    return new Expected(1 << 20, Optional.empty(), "test-env");
                }

                @Override
                public void stored(String objectId, BlobDigest digest, long size) {
                    stored.put(objectId, digest);
                }
            });
            onFull.serveOn(other);
            HttpResponse<byte[]> response =
                    put(onFull.uploadUrl("test", "obj-9", Duration.ofMinutes(5)), new byte[1 << 20]);
            assertThat(response.statusCode()).isEqualTo(507);
            assertThat(new String(response.body(), StandardCharsets.UTF_8))
                    .contains("MiB free and keeps")
                    .contains("the blob was not stored");
            assertThat(stored).isEmpty();
            assertThat(full.digests()).isEmpty();
        } finally {
            other.close();
        }
    }

    @Test
    void anUploadOfAnotherSizeThanAnnouncedIsRefusedAndLeavesNothing() throws Exception {
        announced.put("obj-3", 10L);
        String url = transfers.uploadUrl("test", "obj-3", Duration.ofMinutes(5));
        HttpResponse<byte[]> longer = put(url, new byte[11]);
        assertThat(longer.statusCode()).isEqualTo(400);
        assertThat(new String(longer.body(), StandardCharsets.UTF_8)).contains("announced as 10 bytes");
        HttpResponse<byte[]> shorter = put(url, new byte[9]);
        assertThat(shorter.statusCode()).isEqualTo(400);
        assertThat(received).doesNotContainKey("obj-3");
        assertThat(blobs.digests()).isEmpty();
        try (var incoming = Files.list(dir.resolve("blobs").resolve("incoming"))) {
            assertThat(incoming).isEmpty();
        }
    }

    @Test
    void pathsOutsideTheTransfersFormAre404AndNeverReachTheFileSystem() throws Exception {
        String base = port.url() + Transfers.PREFIX;
        for (String path :
                new String[] {"blobs/../../state/links.key/x", "blobs/abc/x.bin", "nothing", "uploads/nope/x"}) {
            HttpResponse<byte[]> response = get(base + path + "?X-Chalk-Expires=1&X-Chalk-Signature=x", null);
            assertThat(response.statusCode()).as(path).isIn(403, 404, 405);
        }
    }

    private HttpResponse<byte[]> get(String url, String range) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(url)).GET();
        if (range != null) {
            request.header("Range", range);
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    private HttpResponse<byte[]> put(String url, byte[] body) throws Exception {
        return http.send(
                HttpRequest.newBuilder(URI.create(url))
                        .PUT(HttpRequest.BodyPublishers.ofByteArray(body))
                        .build(),
                HttpResponse.BodyHandlers.ofByteArray());
    }

    /** A clock the test moves forward, to expire links without waiting. */
    static final class MutableClock extends Clock {
        private volatile Instant now;

        MutableClock(Instant now) {
            this.now = now;
        }

        void advance(Duration d) {
            now = now.plus(d);
        }

        @Override
        public Instant instant() {
            return now;
        }

        @Override
        public java.time.ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(java.time.ZoneId zone) {
            return this;
        }
    }
}
