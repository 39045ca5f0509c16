package ai.chalk.compute.sandbox;

import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.CreateSandboxResponse;
import ai.chalk.compute.proto.sandbox.v1.ExecError;
import ai.chalk.compute.proto.sandbox.v1.ExecInit;
import ai.chalk.compute.proto.sandbox.v1.ExecRequest;
import ai.chalk.compute.proto.sandbox.v1.ExecResponse;
import ai.chalk.compute.proto.sandbox.v1.OutputData;
import ai.chalk.compute.proto.sandbox.v1.ProcessExited;
import ai.chalk.compute.proto.sandbox.v1.ProcessStarted;
import ai.chalk.compute.proto.sandbox.v1.SandboxInfo;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A tiny in-process SandboxService whose Exec plays a fixed script per command, to test the
 * client's flow control and error handling against exact wire sequences. Everything else about
 * sandboxes is tested against the real server.
 */
public final class ScriptedSandboxService extends SandboxServiceGrpc.SandboxServiceImplBase {

    static final int CHUNK = 64 * 1024;

    /** Output messages the "flood" command has handed to gRPC so far. */
    final AtomicInteger floodSent = new AtomicInteger();
    /** Counts down when a call is cancelled by the client. */
    final CountDownLatch cancelled = new CountDownLatch(1);

    @Override
    public void createSandbox(CreateSandboxRequest request, StreamObserver<CreateSandboxResponse> response) {
        response.onNext(CreateSandboxResponse.newBuilder().setSandbox(SandboxInfo.newBuilder()
                .setId("scripted").setState("RUNNING").setCreatedAt("2025-01-01T00:00:00Z")).build());
        response.onCompleted();
    }

    @Override
    public StreamObserver<ExecRequest> exec(StreamObserver<ExecResponse> responseObserver) {
        ServerCallStreamObserver<ExecResponse> call = (ServerCallStreamObserver<ExecResponse>) responseObserver;
        Object ready = new Object();
        call.setOnReadyHandler(() -> {
            synchronized (ready) {
                ready.notifyAll();
            }
        });
        call.setOnCancelHandler(cancelled::countDown);
        return new StreamObserver<>() {
            private boolean cat;

            @Override
            public void onNext(ExecRequest request) {
                if (request.hasInit()) {
                    cat = request.getInit().getCommand().equals("cat");
                    play(request.getInit(), call, ready);
                } else if (!cat) {
                    // only "cat" reads stdin
                } else if (request.hasStdinData()) {
                    call.onNext(out(OutputData.Stream.STREAM_STDOUT, request.getStdinData().getData()));
                } else if (request.hasStdinEof()) {
                    call.onNext(ExecResponse.newBuilder().setProcessExited(ProcessExited.newBuilder().setExitCode(0)).build());
                    call.onCompleted();
                }
            }

            @Override
            public void onError(Throwable t) {
            }

            @Override
            public void onCompleted() {
            }
        };
    }

    private void play(ExecInit init, ServerCallStreamObserver<ExecResponse> call, Object ready) {
        call.onNext(ExecResponse.newBuilder().setProcessStarted(ProcessStarted.newBuilder().setPid(42)).build());
        switch (init.getCommand()) {
            case "flood" -> {
                int chunks = Integer.parseInt(init.getArgs(0));
                Thread producer = new Thread(() -> {
                    for (int i = 0; i < chunks; i++) {
                        synchronized (ready) {
                            while (!call.isReady() && !call.isCancelled()) {
                                try {
                                    ready.wait(100);
                                } catch (InterruptedException e) {
                                    return;
                                }
                            }
                        }
                        if (call.isCancelled()) {
                            return;
                        }
                        call.onNext(out(OutputData.Stream.STREAM_STDOUT, ByteString.copyFrom(chunk(i))));
                        floodSent.incrementAndGet();
                    }
                    call.onNext(ExecResponse.newBuilder().setProcessExited(ProcessExited.newBuilder().setExitCode(0)).build());
                    call.onCompleted();
                }, "scripted-flood");
                producer.setDaemon(true);
                producer.start();
            }
            case "error-then-status" -> {
                call.onNext(ExecResponse.newBuilder().setError(ExecError.newBuilder()
                        .setCode("NOT_FOUND").setMessage("sandbox nope not found")).build());
                call.onError(Status.NOT_FOUND.withDescription("sandbox nope not found").asRuntimeException());
            }
            case "status-only" -> call.onError(
                    Status.INVALID_ARGUMENT.withDescription("command: must not be empty").asRuntimeException());
            case "timeout" -> {
                call.onNext(out(OutputData.Stream.STREAM_STDOUT, ByteString.copyFromUtf8("partial\n")));
                call.onNext(out(OutputData.Stream.STREAM_STDERR, ByteString.copyFromUtf8("err\n")));
                call.onNext(ExecResponse.newBuilder().setProcessExited(ProcessExited.newBuilder().setSignal(9)).build());
                call.onNext(ExecResponse.newBuilder().setError(ExecError.newBuilder().setCode("DEADLINE_EXCEEDED")
                        .setMessage("the process timed out after 1s")).build());
                call.onCompleted();
            }
            case "cat" -> {
                // echoes stdin until EOF (see onNext)
            }
            case "no-exit" -> call.onCompleted();
            default -> call.onError(Status.UNIMPLEMENTED.withDescription(init.getCommand()).asRuntimeException());
        }
    }

    static byte[] chunk(int i) {
        byte[] data = new byte[CHUNK];
        java.util.Arrays.fill(data, (byte) i);
        return data;
    }

    private static ExecResponse out(OutputData.Stream stream, ByteString data) {
        return ExecResponse.newBuilder().setOutputData(OutputData.newBuilder().setStream(stream).setData(data)).build();
    }
}
