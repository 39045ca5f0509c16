package ai.chalk.compute.function.worker;

import ai.chalk.compute.function.FunctionInvocationException;
import ai.chalk.compute.function.FunctionRegistry;
import ai.chalk.compute.function.RegisteredFunction;
import ai.chalk.compute.function.arrow.ArrowPayloadException;
import ai.chalk.compute.function.arrow.DecodeContext;
import ai.chalk.compute.proto.runtime.v1.CallFunctionRequest;
import ai.chalk.compute.proto.runtime.v1.CallFunctionResponse;
import ai.chalk.compute.proto.runtime.v1.RemoteCallServiceGrpc;
import com.google.protobuf.UnsafeByteOperations;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code chalk.runtime.v1.RemoteCallService/CallFunction}: each request on the stream is run in turn and answered
 * with its response, in order. A function that throws ends the stream with its {@link UserFailure}.
 *
 * <p>The stream's events may arrive on the transport's thread (the worker's server runs handlers directly there);
 * the functions run on {@code executor}, one stream's requests strictly one after another, and the next request is
 * read only once the previous one is answered.
 */
final class CallFunctionService extends RemoteCallServiceGrpc.RemoteCallServiceImplBase {

    private static final Logger log = LoggerFactory.getLogger(CallFunctionService.class);

    private final Supplier<FunctionRegistry> functions;
    private final DecodeContext context;
    private final Executor executor;

    /**
     * @param context  rebuilds sandbox arguments as handles on the server that runs the worker
     * @param executor runs the functions
     */
    CallFunctionService(Supplier<FunctionRegistry> functions, DecodeContext context, Executor executor) {
        this.functions = functions;
        this.context = context;
        this.executor = executor;
    }

    @Override
    public StreamObserver<CallFunctionRequest> callFunction(StreamObserver<CallFunctionResponse> responses) {
        ServerCallStreamObserver<CallFunctionResponse> call =
                (ServerCallStreamObserver<CallFunctionResponse>) responses;
        InOrder inOrder = new InOrder(executor);
        AtomicBoolean halfClosed = new AtomicBoolean();
        call.disableAutoRequest();
        call.setOnCancelHandler(() -> {
            // a cancelled call drops what is still sent on it; the stream's work ends with onError
        });
        call.request(1);
        return new StreamObserver<>() {
            private boolean ended; // only touched by the stream's in-order tasks

            @Override
            public void onNext(CallFunctionRequest request) {
                inOrder.execute(() -> {
                    if (ended) {
                        return;
                    }
                    try {
                        responses.onNext(CallFunctionResponse.newBuilder()
                                // the payload was made for this response and is never written again: no copy
                                .setFeatherStream(UnsafeByteOperations.unsafeWrap(call(request)))
                                .build());
                    } catch (RuntimeException e) {
                        ended = true;
                        responses.onError(e);
                        return;
                    } catch (Error e) {
                        ended = true; // as gRPC ends a call whose handler threw an Error
                        log.error("{} failed in the worker", request.getName(), e);
                        responses.onError(Status.UNKNOWN
                                .withDescription("Application error processing RPC")
                                .withCause(e)
                                .asRuntimeException());
                        return;
                    }
                    if (!halfClosed.get()) {
                        call.request(1);
                    }
                });
            }

            @Override
            public void onError(Throwable t) {
                inOrder.execute(() -> ended = true);
            }

            @Override
            public void onCompleted() {
                halfClosed.set(true);
                inOrder.execute(() -> {
                    if (!ended) {
                        ended = true;
                        responses.onCompleted();
                    }
                });
            }
        };
    }

    /**
     * Runs one call. What it prints or logs on this thread, the worker's word on its failure included, is tagged as
     * the function's own ({@code FunctionOutput}).
     */
    private byte[] call(CallFunctionRequest request) {
        return FunctionOutput.during(request.getName(), () -> run(request));
    }

    private byte[] run(CallFunctionRequest request) {
        FunctionRegistry registry = functions.get();
        RegisteredFunction function = registry.find(request.getName())
                .orElseThrow(() -> Status.NOT_FOUND
                        .withDescription("this worker serves no function '" + request.getName() + "'; it serves "
                                + registry.definitions().stream()
                                        .map(d -> d.name())
                                        .toList())
                        .asRuntimeException());
        try {
            return function.call(request.getFeatherStream().toByteArray(), context);
        } catch (FunctionInvocationException e) {
            Throwable thrown = e.getCause() == null ? e : e.getCause();
            log.info("{} threw {}", request.getName(), thrown.toString());
            throw UserFailure.toStatus(thrown);
        } catch (ArrowPayloadException | IllegalArgumentException e) {
            throw Status.INVALID_ARGUMENT
                    .withDescription(request.getName() + ": " + e.getMessage())
                    .asRuntimeException();
        } catch (RuntimeException e) {
            log.warn("{} failed in the worker", request.getName(), e);
            throw Status.INTERNAL
                    .withDescription(request.getName() + ": the worker failed: " + e)
                    .withCause(e)
                    .asRuntimeException();
        }
    }

    /** Runs one stream's tasks on the executor one after another, in the order they came. */
    private static final class InOrder implements Executor {
        private final Executor executor;
        private final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();
        private final AtomicBoolean running = new AtomicBoolean();

        InOrder(Executor executor) {
            this.executor = executor;
        }

        @Override
        public void execute(Runnable task) {
            tasks.add(task);
            schedule();
        }

        private void schedule() {
            if (running.compareAndSet(false, true)) {
                executor.execute(this::drain);
            }
        }

        private void drain() {
            try {
                for (Runnable task; (task = tasks.poll()) != null; ) {
                    try {
                        task.run();
                    } catch (RuntimeException e) {
                        log.warn("a call's task failed", e);
                    }
                }
            } finally {
                running.set(false);
            }
            if (!tasks.isEmpty()) {
                schedule(); // one came after the last poll and before running was cleared
            }
        }
    }
}
