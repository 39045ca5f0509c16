package ai.chalk.compute.dataset;

import ai.chalk.compute.connection.ServerBusy;
import ai.chalk.compute.connection.SignedLinkTls;
import ai.chalk.compute.error.ChalkComputeException;
import io.grpc.Status;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;
import javax.net.ssl.SSLHandshakeException;

/**
 * Bytes over the server's signed links: a file PUT to an upload link, a file fetched from a download link with its
 * bytes going straight to disk (a fixed buffer whatever the size), resumed with a range request after a broken
 * connection and fetched again through a fresh link when the server says a link expired (403).
 */
final class LinkTransfer {

    /** Fresh links for a revision's files, in order: asked when a link expired. */
    interface Links extends Supplier<List<String>> {}

    private static final int BUFFER = 64 * 1024;
    /** Fresh links asked for one file before giving up: a server whose links expire at once will not improve. */
    private static final int MAX_REFRESHES = 3;
    /** Broken connections resumed for one file before giving up. */
    private static final int MAX_RESUMES = 3;

    // made on the first transfer: building an HttpClient sets up the JDK's default TLS context (several hundred
    // classes) and starts a selector thread, which an application that never moves a file should not pay for at
    // startup (every Spring application with the starter has a DatasetClient bean)
    private HttpClient http; // guarded by this
    private final Optional<Path> trustCertificates;

    /** @param trustCertificates certificates trusted besides the system's (see {@link SignedLinkTls}) */
    LinkTransfer(Optional<Path> trustCertificates) {
        this.trustCertificates = trustCertificates;
    }

    private synchronized HttpClient http() {
        if (http == null) {
            http = HttpClient.newBuilder()
                    .sslContext(SignedLinkTls.context(trustCertificates))
                    .connectTimeout(Duration.ofSeconds(30))
                    .followRedirects(HttpClient.Redirect.NEVER)
                    .build();
        }
        return http;
    }

    /** PUTs {@code file} to {@code url}; a refusal is reported with the server's message. */
    void put(String url, Path file, String what) {
        HttpResponse<String> response;
        try {
            int tries = 0;
            while (true) {
                try {
                    response = http().send(
                                    HttpRequest.newBuilder(URI.create(url))
                                            .PUT(HttpRequest.BodyPublishers.ofFile(file))
                                            .build(),
                                    HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
                } catch (SSLHandshakeException e) {
                    throw untrusted("uploading " + what, e); // the same on every try
                } catch (IOException e) {
                    // a busy server answers and closes without reading the body: the client may see the close first
                    if (ServerBusy.waited(503, Optional.empty(), ++tries)) {
                        continue;
                    }
                    throw e;
                }
                if (!ServerBusy.waited(response.statusCode(), response.headers().firstValue("Retry-After"), ++tries)) {
                    break;
                }
            }
        } catch (IOException e) {
            throw new ChalkComputeException(
                    Status.Code.UNAVAILABLE, "uploading " + what + " to the server failed: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ChalkComputeException(Status.Code.CANCELLED, "uploading " + what + " was interrupted", e);
        }
        if (response.statusCode() != 200) {
            throw refusal(response.statusCode(), "uploading " + what, response.body());
        }
    }

    /**
     * Fetches file {@code index} of {@code links} into {@code part} (created empty by the caller); on a 403 asks
     * {@code refresh} for fresh links and goes on with those. Returns the links in use at the end.
     */
    List<String> get(List<String> links, int index, Links refresh, Path part, String what) {
        List<String> current = links;
        int refreshes = 0;
        int resumes = 0;
        int busy = 0;
        while (true) {
            long have = size(part);
            HttpRequest.Builder request =
                    HttpRequest.newBuilder(URI.create(current.get(index))).GET();
            if (have > 0) {
                request.header("Range", "bytes=" + have + "-");
            }
            HttpResponse<InputStream> response;
            try {
                response = http().send(request.build(), HttpResponse.BodyHandlers.ofInputStream());
            } catch (SSLHandshakeException e) {
                throw untrusted("downloading " + what, e);
            } catch (IOException e) {
                if (++resumes > MAX_RESUMES) {
                    throw new ChalkComputeException(
                            Status.Code.UNAVAILABLE, "downloading " + what + " failed: " + e.getMessage(), e);
                }
                continue;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ChalkComputeException(Status.Code.CANCELLED, "downloading " + what + " was interrupted", e);
            }
            int status = response.statusCode();
            try {
                if (status == 503) {
                    String message = drain(response); // before the wait: the connection goes back at once
                    if (ServerBusy.waited(status, response.headers().firstValue("Retry-After"), ++busy)) {
                        continue;
                    }
                    throw refusal(status, "downloading " + what, message);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ChalkComputeException(Status.Code.CANCELLED, "downloading " + what + " was interrupted", e);
            }
            if (status == 403) {
                String message = drain(response);
                if (++refreshes > MAX_REFRESHES) {
                    throw refusal(status, "downloading " + what, message);
                }
                current = refresh.get();
                continue;
            }
            if (status != 200 && status != 206) {
                throw refusal(status, "downloading " + what, drain(response));
            }
            // 200: the server sent the whole file (no range asked, or it ignored it): start over
            boolean append = status == 206;
            try (InputStream in = response.body();
                    OutputStream out = Files.newOutputStream(
                            part,
                            StandardOpenOption.WRITE,
                            append ? StandardOpenOption.APPEND : StandardOpenOption.TRUNCATE_EXISTING)) {
                byte[] buffer = new byte[BUFFER];
                for (int n; (n = in.read(buffer)) >= 0; ) {
                    out.write(buffer, 0, n);
                }
                return current;
            } catch (InterruptedIOException e) {
                Thread.currentThread().interrupt();
                throw new ChalkComputeException(Status.Code.CANCELLED, "downloading " + what + " was interrupted", e);
            } catch (IOException e) {
                if (!Files.exists(part)) {
                    throw new UncheckedIOException("cannot write " + part + " to download " + what, e);
                }
                if (++resumes > MAX_RESUMES) {
                    throw new ChalkComputeException(
                            Status.Code.UNAVAILABLE, "downloading " + what + " failed: " + e.getMessage(), e);
                }
            }
        }
    }

    /** A link whose server's certificate this client does not trust (or whose names miss its host): no retry helps. */
    static ChalkComputeException untrusted(String what, SSLHandshakeException e) {
        return new ChalkComputeException(
                Status.Code.UNAVAILABLE,
                what + " failed: the TLS handshake with the link's server failed (" + e.getMessage() + "); a server"
                        + " with a certificate of its own needs the client to trust it (trustCertificates,"
                        + " chalk.compute.tls.trust-certificates), and its certificate must name the host its links"
                        + " use",
                e);
    }

    private static long size(Path part) {
        try {
            return Files.size(part);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + part, e);
        }
    }

    private static String drain(HttpResponse<InputStream> response) {
        try (InputStream in = response.body()) {
            return new String(in.readNBytes(4096), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "";
        }
    }

    private static ChalkComputeException refusal(int status, String what, String body) {
        Status.Code code = switch (status) {
            case 400, 413, 416 -> Status.Code.INVALID_ARGUMENT;
            case 403 -> Status.Code.PERMISSION_DENIED;
            case 404, 410 -> Status.Code.NOT_FOUND;
            case 409 -> Status.Code.FAILED_PRECONDITION;
            default -> status >= 500 ? Status.Code.UNAVAILABLE : Status.Code.UNKNOWN;
        };
        return ChalkComputeException.of(
                code, what + " was refused by the server (HTTP " + status + "): " + body.strip(), null);
    }
}
