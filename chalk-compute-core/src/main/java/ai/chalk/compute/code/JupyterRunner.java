package ai.chalk.compute.code;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * Python snippets in a kernel of a Jupyter server (the {@code jupyter} variant): the kernel is started through the
 * server's REST API, snippets go as {@code execute_request} over the kernel's WebSocket channels (Jupyter messaging
 * protocol 5.3), output, displays and errors come back on iopub until the kernel is idle again. Interrupts and
 * restarts go through the REST API.
 */
final class JupyterRunner implements SnippetRunner {

    static final Duration GRACE = Duration.ofSeconds(3);
    /** How long a kernel may take to answer once started or restarted. */
    static final Duration READY_TIMEOUT = Duration.ofSeconds(60);

    private static final Duration ASK_AGAIN = Duration.ofMillis(500);
    /** The largest message taken from the kernel; a bigger one ends the connection. */
    static final int MAX_MESSAGE = 32 << 20;

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern ANSI = Pattern.compile("\u001B\\[[0-9;]*[A-Za-z]");

    private final URI server;
    private final String token;
    private final HttpClient http = HttpClient.newHttpClient();
    private final String session = UUID.randomUUID().toString();
    private final BlockingQueue<JsonNode> messages = new LinkedBlockingQueue<>();
    final String kernelId;
    private final WebSocket socket;
    private final Object turn = new Object();
    private volatile boolean running;

    /**
     * Starts a kernel whose working directory is {@code kernelDir}, a path of the server's contents (relative to its
     * root directory; empty for the root).
     */
    JupyterRunner(URI server, String token, String kernelDir) {
        this.server = URI.create(server.toString().endsWith("/") ? server.toString() : server + "/");
        this.token = token;
        // always a path: without one the kernel runs in the server process's directory, not its root
        ObjectNode start = JSON.createObjectNode().put("name", "python3").put("path", kernelDir);
        JsonNode kernel = rest("POST", "api/kernels", start.toString());
        this.kernelId = kernel.path("id").asText();
        URI ws = URI.create(this.server.toString().replaceFirst("^http", "ws") + "api/kernels/" + kernelId
                + "/channels?session_id=" + session + "&token=" + URLEncoder.encode(token, StandardCharsets.UTF_8));
        this.socket = http.newWebSocketBuilder()
                .header("Authorization", "token " + token)
                .buildAsync(ws, new Listener())
                .join();
        awaitKernel();
    }

    /** A shell-channel message of the Jupyter protocol, its content still to fill. */
    private ObjectNode envelope(String msgId, String type) {
        ObjectNode message = JSON.createObjectNode();
        message.putObject("header")
                .put("msg_id", msgId)
                .put("username", "chalk")
                .put("session", session)
                .put("msg_type", type)
                .put("version", "5.3")
                .put("date", Instant.now().toString());
        message.putObject("parent_header");
        message.putObject("metadata");
        message.putObject("content");
        message.put("channel", "shell");
        message.putArray("buffers");
        return message;
    }

    /** Restarts the kernel, then waits until it answers: a request sent while it starts is lost, not queued. */
    private void restart() {
        rest("POST", "api/kernels/" + kernelId + "/restart", "{}");
        awaitKernel();
    }

    /** Asks the kernel for its info every half second until it replies, for at most {@link #READY_TIMEOUT}. */
    private void awaitKernel() {
        long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
        try {
            while (System.nanoTime() < deadline) {
                String msgId = UUID.randomUUID().toString();
                socket.sendText(envelope(msgId, "kernel_info_request").toString(), true)
                        .join();
                long askAgain = Math.min(deadline, System.nanoTime() + ASK_AGAIN.toNanos());
                for (long now = System.nanoTime(); now < askAgain; now = System.nanoTime()) {
                    JsonNode m = messages.poll(askAgain - now, TimeUnit.NANOSECONDS);
                    if (m != null && m.has("chalk_closed")) {
                        throw new IllegalStateException("the connection to the kernel ended: "
                                + m.get("chalk_closed").asText());
                    }
                    if (m != null
                            && msgId.equals(
                                    m.path("parent_header").path("msg_id").asText())
                            && m.path("header").path("msg_type").asText().equals("kernel_info_reply")) {
                        return;
                    }
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while the kernel started", e);
        }
        throw new IllegalStateException(
                "the kernel " + kernelId + " did not answer within " + READY_TIMEOUT.toSeconds() + "s of starting");
    }

    /** Takes whole text messages off the socket, bounded in size. */
    private final class Listener implements WebSocket.Listener {
        private final StringBuilder partial = new StringBuilder();

        @Override
        public CompletionStage<?> onText(WebSocket webSocket, CharSequence data, boolean last) {
            partial.append(data);
            if (partial.length() > MAX_MESSAGE) {
                webSocket.abort();
                messages.add(JSON.createObjectNode().put("chalk_closed", "a message larger than " + MAX_MESSAGE));
                return null;
            }
            if (last) {
                try {
                    messages.add(JSON.readTree(partial.toString()));
                } catch (IOException e) {
                    // not a message of the protocol: dropped
                }
                partial.setLength(0);
            }
            webSocket.request(1);
            return null;
        }

        @Override
        public CompletionStage<?> onClose(WebSocket webSocket, int statusCode, String reason) {
            messages.add(JSON.createObjectNode().put("chalk_closed", "closed: " + statusCode + " " + reason));
            return null;
        }

        @Override
        public void onError(WebSocket webSocket, Throwable error) {
            messages.add(JSON.createObjectNode().put("chalk_closed", String.valueOf(error)));
        }
    }

    /**
     * Waits until the Jupyter server at {@code server} answers {@code api/status} with {@code token}; {@code gone}
     * says why it never will (its process ended), or is empty while it may still come up.
     */
    static void awaitServer(
            URI server, String token, Duration limit, java.util.function.Supplier<Optional<String>> gone) {
        HttpClient http =
                HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        long deadline = System.nanoTime() + limit.toNanos();
        while (true) {
            try {
                HttpResponse<Void> status = http.send(
                        HttpRequest.newBuilder(server.resolve("api/status"))
                                .header("Authorization", "token " + token)
                                .timeout(Duration.ofSeconds(5))
                                .build(),
                        HttpResponse.BodyHandlers.discarding());
                if (status.statusCode() == 200) {
                    return;
                }
            } catch (IOException e) {
                // not listening yet
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for the Jupyter server", e);
            }
            Optional<String> why = gone.get();
            if (why.isPresent()) {
                throw new IllegalStateException(why.get());
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(
                        "the Jupyter server at " + server + " did not answer within " + limit.toSeconds() + "s");
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for the Jupyter server", e);
            }
        }
    }

    /** The kernel's working directory on the server's machine, asked of the kernel without touching its state. */
    String kernelDirectory() {
        ExecutionResult cwd = run(
                "print(__import__('os').getcwd())",
                RunOptions.defaults(),
                Optional.of(Duration.ofSeconds(30)),
                false,
                (error, bytes) -> {});
        if (!cwd.success() || cwd.stdout().isBlank()) {
            throw new IllegalStateException("the kernel did not say its working directory: "
                    + cwd.executionError().orElse(cwd.stderr()));
        }
        return cwd.stdout().strip();
    }

    /** A call to the server's REST API that answered 2xx, its JSON body. */
    JsonNode rest(String method, String path, String body) {
        HttpResponse<String> response = call(method, path, body);
        if (response.statusCode() / 100 != 2) {
            throw new IllegalStateException("the Jupyter server answered " + method + " /" + path + " with "
                    + response.statusCode() + ": " + response.body());
        }
        try {
            return response.body().isEmpty() ? JSON.createObjectNode() : JSON.readTree(response.body());
        } catch (IOException e) {
            throw new IllegalStateException(
                    "the Jupyter server answered " + method + " /" + path + " with what is not JSON: " + e.getMessage(),
                    e);
        }
    }

    /** A call to the server's REST API, whatever it answered. */
    HttpResponse<String> call(String method, String path, String body) {
        HttpRequest request = HttpRequest.newBuilder(server.resolve(path))
                .header("Authorization", "token " + token)
                .header("Content-Type", "application/json")
                .timeout(Duration.ofSeconds(60))
                .method(method, HttpRequest.BodyPublishers.ofString(body))
                .build();
        try {
            return http.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new IllegalStateException("the Jupyter server at " + server + " cannot be reached: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    @Override
    public ExecutionResult run(String code, RunOptions options, Optional<Duration> defaultTimeout) {
        return run(code, options, options.timeoutOption().or(() -> defaultTimeout), true, (error, bytes) -> {});
    }

    /**
     * Runs {@code code} when the kernel is free, handing {@code raw} each stream chunk as it comes (stderr when the
     * flag is set); {@code storeHistory} off keeps it out of the kernel's history and execution count.
     */
    ExecutionResult run(
            String code,
            RunOptions options,
            Optional<Duration> timeout,
            boolean storeHistory,
            java.util.function.BiConsumer<Boolean, byte[]> raw) {
        synchronized (turn) {
            running = true;
            try {
                return execute(code, options, timeout, storeHistory, raw);
            } finally {
                running = false;
            }
        }
    }

    private ExecutionResult execute(
            String code,
            RunOptions options,
            Optional<Duration> timeout,
            boolean storeHistory,
            java.util.function.BiConsumer<Boolean, byte[]> raw) {
        String msgId = UUID.randomUUID().toString();
        ObjectNode request = envelope(msgId, "execute_request");
        request.putObject("content")
                .put("code", code)
                .put("silent", false)
                .put("store_history", storeHistory)
                .put("allow_stdin", false)
                // one request is in flight at a time, so there is no queue to abort after an error; with true,
                // ipykernel aborts, with no result, a request that reaches it just after an error or an interrupt
                .put("stop_on_error", false)
                .putObject("user_expressions");
        OutputLines stdout = new OutputLines(options.stdoutCallback(), false);
        OutputLines stderr = new OutputLines(options.stderrCallback(), true);
        List<Result> results = new ArrayList<>();
        CodeError error = null;
        socket.sendText(request.toString(), true).join();
        long deadline = timeout.map(t -> System.nanoTime() + t.toNanos()).orElse(Long.MAX_VALUE);
        boolean interrupted = false;
        long killAt = Long.MAX_VALUE;
        try {
            while (true) {
                long now = System.nanoTime();
                if (!interrupted && now >= deadline) {
                    interrupted = true;
                    interrupt();
                    killAt = now + GRACE.toNanos();
                }
                if (now >= killAt) {
                    restart();
                    return failed(
                            stdout,
                            stderr,
                            results,
                            "timed out after " + timeout.orElseThrow().toSeconds()
                                    + "s, and the snippet did not stop within " + GRACE.toSeconds()
                                    + "s: the kernel was restarted and its state is lost");
                }
                JsonNode m = messages.poll(Math.max(1, Math.min(deadline, killAt) - now), TimeUnit.NANOSECONDS);
                if (m == null) {
                    continue;
                }
                if (m.has("chalk_closed")) {
                    return failed(
                            stdout,
                            stderr,
                            results,
                            "the connection to the kernel ended: "
                                    + m.get("chalk_closed").asText());
                }
                if (!msgId.equals(m.path("parent_header").path("msg_id").asText())) {
                    continue;
                }
                JsonNode content = m.path("content");
                switch (m.path("header").path("msg_type").asText()) {
                    case "stream" -> {
                        boolean isErr = content.path("name").asText().equals("stderr");
                        byte[] bytes = content.path("text").asText().getBytes(StandardCharsets.UTF_8);
                        (isErr ? stderr : stdout).add(bytes);
                        raw.accept(isErr, bytes);
                    }
                    case "display_data" -> results.add(result(content.path("data"), false));
                    case "execute_result" -> results.add(result(content.path("data"), true));
                    case "error" -> {
                        StringBuilder trace = new StringBuilder();
                        content.path("traceback")
                                .forEach(line -> trace.append(
                                                ANSI.matcher(line.asText()).replaceAll(""))
                                        .append('\n'));
                        error = new CodeError(
                                content.path("ename").asText(),
                                content.path("evalue").asText(),
                                trace.toString());
                    }
                    case "status" -> {
                        if (content.path("execution_state").asText().equals("idle")) {
                            stdout.finish();
                            stderr.finish();
                            return finished(stdout, stderr, results, error, interrupted, timeout);
                        }
                    }
                    default -> {
                        // execute_input, clear_output and the like: nothing to keep
                    }
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            interrupt();
            return failed(stdout, stderr, results, "interrupted while waiting");
        }
    }

    private ExecutionResult finished(
            OutputLines stdout,
            OutputLines stderr,
            List<Result> results,
            CodeError error,
            boolean timedOut,
            Optional<Duration> timeout) {
        if (error != null && error.name().equals("SystemExit")) {
            // as in a chalk sandbox, the next snippet starts fresh: IPython caught the SystemExit and its kernel lives
            // on, so its namespace is cleared (a kernel restart would cost seconds, and a request sent while the new
            // kernel's channels come up can be lost)
            ExecutionResult reset = execute(
                    "get_ipython().run_line_magic('reset', '-f')",
                    RunOptions.defaults(),
                    Optional.of(Duration.ofSeconds(30)),
                    false,
                    (isErr, bytes) -> {});
            if (!reset.executionOk() || reset.codeError().isPresent()) {
                restart();
            }
            int code;
            try {
                code = error.value().isEmpty()
                        ? 0
                        : Integer.parseInt(error.value().trim());
            } catch (NumberFormatException e) {
                code = 1;
            }
            return new ExecutionResult(
                    stdout.text(),
                    stderr.text(),
                    results,
                    Optional.empty(),
                    true,
                    Optional.empty(),
                    OptionalInt.of(code),
                    List.of());
        }
        if (timedOut) {
            return failed(
                    stdout,
                    stderr,
                    results,
                    "timed out after " + timeout.orElseThrow().toSeconds()
                            + "s: KeyboardInterrupt raised in the snippet; the kernel keeps its state");
        }
        return new ExecutionResult(
                stdout.text(),
                stderr.text(),
                results,
                Optional.ofNullable(error),
                true,
                Optional.empty(),
                OptionalInt.empty(),
                List.of());
    }

    private static ExecutionResult failed(OutputLines stdout, OutputLines stderr, List<Result> results, String why) {
        stdout.finish();
        stderr.finish();
        return ExecutionResult.failed(stdout.text(), stderr.text(), results, why);
    }

    private static Result result(JsonNode data, boolean main) {
        Map<String, byte[]> bundle = new LinkedHashMap<>();
        Iterator<Map.Entry<String, JsonNode>> fields = data.fields();
        while (fields.hasNext()) {
            Map.Entry<String, JsonNode> f = fields.next();
            String mime = f.getKey();
            JsonNode value = f.getValue();
            byte[] bytes;
            if (value.isTextual() && (mime.equals("image/png") || mime.equals("image/jpeg"))) {
                bytes = Base64.getMimeDecoder().decode(value.asText());
            } else if (value.isTextual()) {
                bytes = value.asText().getBytes(StandardCharsets.UTF_8);
            } else {
                bytes = value.toString().getBytes(StandardCharsets.UTF_8);
            }
            bundle.put(mime, bytes);
        }
        return new Result(bundle, main);
    }

    /** Whether the server has a file at {@code path} (relative to its root), by its contents API. */
    boolean fileExists(String path) {
        HttpResponse<String> r = call("GET", "api/contents/" + path + "?content=0", "");
        return r.statusCode() / 100 == 2;
    }

    /** Deletes the server's file at {@code path} (relative to its root); one that is gone already is no error. */
    void deleteFile(String path) {
        HttpResponse<String> r = call("DELETE", "api/contents/" + path, "");
        if (r.statusCode() / 100 != 2 && r.statusCode() != 404) {
            throw new IllegalStateException("the Jupyter server answered DELETE /api/contents/" + path + " with "
                    + r.statusCode() + ": " + r.body());
        }
    }

    @Override
    public void interrupt() {
        if (running) {
            rest("POST", "api/kernels/" + kernelId + "/interrupt", "{}");
        }
    }

    /** Shuts the kernel down and closes the connection. */
    @Override
    public void close() {
        try {
            socket.sendClose(WebSocket.NORMAL_CLOSURE, "done");
        } catch (RuntimeException e) {
            // closed already
        }
        try {
            rest("DELETE", "api/kernels/" + kernelId, "");
        } catch (RuntimeException e) {
            // the server is gone; so is its kernel
        }
    }
}
