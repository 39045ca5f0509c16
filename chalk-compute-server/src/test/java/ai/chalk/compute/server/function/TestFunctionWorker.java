package ai.chalk.compute.server.function;

import ai.chalk.compute.proto.common.v1.ChalkError;
import ai.chalk.compute.proto.common.v1.ChalkException;
import ai.chalk.compute.proto.common.v1.ErrorCode;
import ai.chalk.compute.proto.runtime.v1.CallFunctionRequest;
import ai.chalk.compute.proto.runtime.v1.CallFunctionResponse;
import ai.chalk.compute.proto.runtime.v1.RemoteCallServiceGrpc;
import com.google.protobuf.ByteString;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.stub.StreamObserver;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A test worker speaking the functions protocol (docs/functions-protocol.md section 3), run by the server's tests
 * as a real process in a real sandbox: it serves {@code RemoteCallService/CallFunction} and gRPC health on the Unix
 * socket {@code CHALK_WORKER_SOCKET}. Functions, by request name: {@code echo} answers
 * {@code <label>|<worker id>|<payload>} where the label is the classpath resource {@code chalk-test-answer.txt}
 * (so two code snapshots answer differently); {@code fail} ends the call with UNKNOWN and a {@code chalk-error-bin}
 * trailer; {@code crash} halts the JVM mid-call; {@code probe} answers whether {@code /chalk/code} is writable and
 * the worker's environment and Java and whether the server's socket is reachable; {@code slow} waits the payload's milliseconds, then echoes;
 * {@code print} writes the payload to stdout tagged as the protocol's worker tags a call's output, and untagged to stderr;
 * {@code flood} writes a line of the payload's megabytes without a break until its end, then 1,000 short lines.
 * {@code big} answers the payload's kibibytes of {@code x}. {@code fetch} GETs the URL of the payload (with {@code Authorization: Bearer $API_KEY}) and answers the status and
 * body. The functions of {@link ArrowTestFunctions} compute on Arrow payloads, as tasks and scorers of evaluations.
 * With {@code TEST_WORKER_EXIT_AFTER_MS} set, the worker exits that long after it serves.
 */
public final class TestFunctionWorker {

    private static final Metadata.Key<ChalkError> ERROR =
            Metadata.Key.of("chalk-error-bin", ProtoUtils.metadataMarshaller(ChalkError.getDefaultInstance()));

    private TestFunctionWorker() {}

    public static void main(String[] args) throws Exception {
        Path socket = Path.of(System.getenv("CHALK_WORKER_SOCKET"));
        String workerId = System.getenv("CHALK_WORKER_ID");
        String label = label();
        System.out.println(
                "test worker " + workerId + " (" + label + ") serving " + System.getenv("CHALK_WORKER_FUNCTIONS"));
        Files.deleteIfExists(socket);
        EpollEventLoopGroup group = new EpollEventLoopGroup(2);
        HealthStatusManager health = new HealthStatusManager();
        Server server = NettyServerBuilder.forAddress(new DomainSocketAddress(socket.toString()))
                .channelType(EpollServerDomainSocketChannel.class)
                .bossEventLoopGroup(group)
                .workerEventLoopGroup(group)
                .addService(new Calls(label, workerId))
                .addService(health.getHealthService())
                .build()
                .start();
        health.setStatus("", io.grpc.health.v1.HealthCheckResponse.ServingStatus.SERVING);
        String exitAfter = System.getenv("TEST_WORKER_EXIT_AFTER_MS"); // a worker dying young, again and again
        if (exitAfter != null) {
            Thread.sleep(Long.parseLong(exitAfter));
            Runtime.getRuntime().halt(4);
        }
        server.awaitTermination();
    }

    private static String label() throws Exception {
        try (InputStream in = TestFunctionWorker.class.getClassLoader().getResourceAsStream("chalk-test-answer.txt")) {
            return in == null ? "none" : new String(in.readAllBytes(), StandardCharsets.UTF_8).trim();
        }
    }

    /** Whether the code is writable (it must not be) and the function's env as the worker sees them. */
    private static String probe() {
        String code;
        try {
            Files.createFile(Path.of("/chalk/code/written-by-worker"));
            code = "code-writable";
        } catch (java.io.IOException e) {
            code = "code-read-only";
        }
        return code + ";GREETING=" + System.getenv("GREETING") + ";id=" + System.getenv("CHALK_WORKER_ID")
                + ";functions=" + System.getenv("CHALK_WORKER_FUNCTIONS") + ";java=" + System.getProperty("java.home")
                + " " + System.getProperty("java.runtime.version") + ";server=" + serverReachable() + ";image="
                + imageMarker();
    }

    /** The status and body of a GET of {@code url}, as Java's own client sends it (the JVM's proxy settings apply). */
    private static String fetch(String url) {
        try {
            java.net.HttpURLConnection c = (java.net.HttpURLConnection)
                    java.net.URI.create(url).toURL().openConnection();
            c.setRequestProperty("Authorization", "Bearer " + System.getenv("API_KEY"));
            c.setConnectTimeout(10_000);
            c.setReadTimeout(10_000);
            int status = c.getResponseCode();
            java.io.InputStream in = status < 400 ? c.getInputStream() : c.getErrorStream();
            return status + " "
                    + (in == null ? "" : new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8));
        } catch (java.io.IOException e) {
            return "failed " + e;
        }
    }

    /** What a function's own image says about itself in /etc/chalk-function-image, or "none". */
    private static String imageMarker() {
        try {
            return Files.readString(Path.of("/etc/chalk-function-image")).trim();
        } catch (java.io.IOException e) {
            return "none";
        }
    }

    /** Whether the server's socket ({@code CHALK_COMPUTE_TARGET}) accepts a connection from here. */
    private static String serverReachable() {
        String target = System.getenv("CHALK_COMPUTE_TARGET");
        if (target == null || !target.startsWith("unix://")) {
            return "no-target";
        }
        try (var c = java.nio.channels.SocketChannel.open(
                java.net.UnixDomainSocketAddress.of(target.substring("unix://".length())))) {
            return "reachable";
        } catch (java.io.IOException e) {
            return "unreachable (" + e.getMessage() + ")";
        }
    }

    /** Ends a call as the protocol's worker ends a user failure: UNKNOWN with a {@code chalk-error-bin} trailer. */
    private static void fail(StreamObserver<CallFunctionResponse> out, Exception e) {
        Metadata trailers = new Metadata();
        trailers.put(
                ERROR,
                ChalkError.newBuilder()
                        .setCode(ErrorCode.ERROR_CODE_RESOLVER_FAILED)
                        .setMessage(String.valueOf(e.getMessage()))
                        .setException(ChalkException.newBuilder()
                                .setKind(e.getClass().getName())
                                .setMessage(String.valueOf(e.getMessage()))
                                .setStacktrace("at TestFunctionWorker.fail"))
                        .build());
        out.onError(Status.UNKNOWN.withDescription(e.getMessage()).asRuntimeException(trailers));
    }

    private static final class Calls extends RemoteCallServiceGrpc.RemoteCallServiceImplBase {
        private final String label;
        private final String workerId;

        Calls(String label, String workerId) {
            this.label = label;
            this.workerId = workerId;
        }

        @Override
        public StreamObserver<CallFunctionRequest> callFunction(StreamObserver<CallFunctionResponse> out) {
            return new StreamObserver<>() {
                private boolean failed;

                @Override
                public void onNext(CallFunctionRequest r) {
                    if (ArrowTestFunctions.serves(r.getName())) {
                        byte[] answer;
                        try {
                            answer = ArrowTestFunctions.call(
                                    r.getName(), r.getFeatherStream().toByteArray());
                        } catch (Exception e) {
                            failed = true;
                            fail(out, e);
                            return;
                        }
                        out.onNext(CallFunctionResponse.newBuilder()
                                .setFeatherStream(ByteString.copyFrom(answer))
                                .build());
                        return;
                    }
                    String payload = r.getFeatherStream().toStringUtf8();
                    switch (r.getName()) {
                        case "crash" -> Runtime.getRuntime().halt(3);
                        case "fail" -> {
                            failed = true;
                            fail(out, new IllegalStateException("boom: " + payload));
                            return;
                        }
                        case "probe" -> payload = probe();
                        case "print" -> {
                            // as the real worker does: a call's line tagged with its function, another one not
                            System.out.println("[chalk-function print] printed " + payload);
                            System.err.println("untagged " + payload);
                        }
                        case "flood" -> {
                            // a line of the payload's megabytes with no break until its end, then 1,000 short ones
                            byte[] megabyte = new byte[1 << 20];
                            java.util.Arrays.fill(megabyte, (byte) 'x');
                            for (int i = 0; i < Integer.parseInt(payload); i++) {
                                System.out.write(megabyte, 0, megabyte.length);
                            }
                            System.out.println();
                            for (int i = 0; i < 1000; i++) {
                                System.out.println("[chalk-function flood] line " + i);
                            }
                            System.out.flush();
                        }
                        case "fetch" -> payload = fetch(payload);
                        case "big" -> payload = "x".repeat(Integer.parseInt(payload) << 10);
                        case "slow" -> {
                            try {
                                Thread.sleep(Long.parseLong(payload));
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                        }
                        default -> {}
                    }
                    out.onNext(CallFunctionResponse.newBuilder()
                            .setFeatherStream(ByteString.copyFromUtf8(label + "|" + workerId + "|" + payload))
                            .build());
                }

                @Override
                public void onError(Throwable t) {}

                @Override
                public void onCompleted() {
                    if (!failed) {
                        out.onCompleted();
                    }
                }
            };
        }
    }
}
