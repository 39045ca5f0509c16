package ai.chalk.compute.server.outbound;

import java.io.IOException;
import java.io.InputStream;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The answer of an HTTP endpoint the server calls on a tenant's behalf (a model provider, an embeddings endpoint), read
 * within bounds: at most {@code maxBytes} of body, in at most the request's own timeout again once the headers are
 * in (a request's timeout ends at the headers). Whole, an endpoint's answer of any size went to the server's heap, and
 * one that trickled held a server thread for good.
 *
 * @param status   the HTTP status
 * @param headers  the answer's headers
 * @param body     the body, or its first {@code maxBytes + 1} bytes when {@link #tooLarge}
 * @param tooLarge whether the body was longer than allowed
 */
public record BoundedAnswer(int status, HttpHeaders headers, byte[] body, boolean tooLarge) {

    /**
     * Cuts bodies at their deadline: a thread of its own, since the common pool that delayed executors use otherwise
     * is where blocking work of the server waits, and a deadline queued behind it fired late or never.
     */
    private static final ScheduledExecutorService DEADLINES = deadlines();

    private static ScheduledExecutorService deadlines() {
        ScheduledThreadPoolExecutor d = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "chalk-outbound-deadlines");
            t.setDaemon(true);
            return t;
        });
        d.setRemoveOnCancelPolicy(true); // an answer read in time lets go of its stream at once
        return d;
    }

    /**
     * Sends {@code request} (which must have a timeout) with {@code client} and reads its answer within bounds.
     *
     * @throws IOException when the endpoint cannot be reached, or its body does not arrive in time
     */
    public static BoundedAnswer send(HttpClient client, HttpRequest request, int maxBytes, Duration bodyTime)
            throws IOException, InterruptedException {
        HttpResponse<InputStream> response = client.send(request, HttpResponse.BodyHandlers.ofInputStream());
        byte[] body;
        try (InputStream in = response.body()) {
            ScheduledFuture<?> deadline =
                    DEADLINES.schedule(() -> close(in), bodyTime.toMillis(), TimeUnit.MILLISECONDS);
            try {
                body = in.readNBytes(maxBytes + 1);
            } finally {
                deadline.cancel(false);
            }
        }
        return new BoundedAnswer(response.statusCode(), response.headers(), body, body.length > maxBytes);
    }

    private static void close(InputStream in) {
        try {
            in.close();
        } catch (IOException e) {
            // the read it cuts fails anyway
        }
    }
}
