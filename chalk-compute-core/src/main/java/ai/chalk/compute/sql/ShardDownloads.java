package ai.chalk.compute.sql;

import ai.chalk.compute.connection.ServerBusy;
import ai.chalk.compute.connection.SignedLinkTls;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Streams result shards from their signed links to files (a fixed buffer whatever the size). A link the server
 * refuses (403: expired) is refreshed once and tried again; any other refusal fails with the server's message.
 */
final class ShardDownloads {

    // made on the first download: building an HttpClient sets up the JDK's default TLS context (several hundred
    // classes) and starts a selector thread, which an application that never downloads a shard should not pay for at
    // startup (every Spring application with the starter has an SQLClient bean)
    private HttpClient http; // guarded by this
    private final Optional<Path> trustCertificates;

    /** @param trustCertificates certificates trusted besides the system's (see {@link SignedLinkTls}) */
    ShardDownloads(Optional<Path> trustCertificates) {
        this.trustCertificates = trustCertificates;
    }

    private synchronized HttpClient http() {
        if (http == null) {
            http = HttpClient.newBuilder()
                    .sslContext(SignedLinkTls.context(trustCertificates))
                    .connectTimeout(Duration.ofSeconds(30))
                    .followRedirects(HttpClient.Redirect.NORMAL)
                    .build();
        }
        return http;
    }

    /**
     * Downloads the shard {@code link} names to {@code target}, which must not exist.
     *
     * @param refresh gets fresh links when the current one is refused
     */
    void fetch(Path target, Supplier<String> link, Runnable refresh) throws IOException {
        int busy = 0;
        for (int attempt = 0; ; attempt++) {
            HttpResponse<InputStream> response;
            try {
                response = http().send(
                                HttpRequest.newBuilder(URI.create(link.get()))
                                        .GET()
                                        .build(),
                                HttpResponse.BodyHandlers.ofInputStream());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while downloading " + target.getFileName(), e);
            }
            try (InputStream body = response.body()) {
                if (response.statusCode() == 200) {
                    try (var out = Files.newOutputStream(target, StandardOpenOption.CREATE_NEW)) {
                        body.transferTo(out);
                    }
                    return;
                }
                String message = new String(body.readNBytes(4096), StandardCharsets.UTF_8).strip();
                try {
                    if (response.statusCode() == 503
                            && ServerBusy.waited(
                                    response.statusCode(), response.headers().firstValue("Retry-After"), ++busy)) {
                        attempt--; // a busy server is not a refusal of the link
                        continue;
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while downloading " + target.getFileName(), e);
                }
                if (response.statusCode() == 403 && attempt == 0) {
                    refresh.run();
                    continue;
                }
                throw new IOException("the server refused the download of " + target.getFileName() + " (HTTP "
                        + response.statusCode() + "): " + message);
            }
        }
    }
}
