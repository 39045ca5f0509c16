package ai.chalk.compute.function.worker;

import ai.chalk.compute.function.FunctionInvocationException;
import ai.chalk.compute.function.FunctionRegistry;
import ai.chalk.compute.function.RegisteredFunction;
import ai.chalk.compute.function.arrow.ArrowPayloadException;
import ai.chalk.compute.function.arrow.DecodeContext;
import ai.chalk.compute.proto.runtime.v1.CallFunctionRequest;
import ai.chalk.compute.proto.runtime.v1.CallFunctionResponse;
import ai.chalk.compute.proto.runtime.v1.RemoteCallServiceGrpc;
import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code chalk.runtime.v1.RemoteCallService/CallFunction}: each request on the stream is run in turn and answered
 * with its response, in order. A function that throws ends the stream with its {@link UserFailure}.
 */
final class CallFunctionService extends RemoteCallServiceGrpc.RemoteCallServiceImplBase {

    private static final Logger log = LoggerFactory.getLogger(CallFunctionService.class);

    private final Supplier<FunctionRegistry> functions;
    private final DecodeContext context;

    /** @param context rebuilds sandbox arguments as handles on the server that runs the worker */
    CallFunctionService(Supplier<FunctionRegistry> functions, DecodeContext context) {
        this.functions = functions;
        this.context = context;
    }

    @Override
    public StreamObserver<CallFunctionRequest> callFunction(StreamObserver<CallFunctionResponse> responses) {
        return new StreamObserver<>() {
            private boolean ended;

            @Override
            public void onNext(CallFunctionRequest request) {
                if (ended) {
                    return;
                }
                try {
                    responses.onNext(CallFunctionResponse.newBuilder()
                            .setFeatherStream(ByteString.copyFrom(call(request))).build());
                } catch (RuntimeException e) {
                    ended = true;
                    responses.onError(e);
                }
            }

            @Override
            public void onError(Throwable t) {
                ended = true;
            }

            @Override
            public void onCompleted() {
                if (!ended) {
                    ended = true;
                    responses.onCompleted();
                }
            }
        };
    }

    private byte[] call(CallFunctionRequest request) {
        FunctionRegistry registry = functions.get();
        RegisteredFunction function = registry.find(request.getName()).orElseThrow(() -> Status.NOT_FOUND
                .withDescription("this worker serves no function '" + request.getName() + "'; it serves "
                        + registry.definitions().stream().map(d -> d.name()).toList())
                .asRuntimeException());
        try {
            return function.call(request.getFeatherStream().toByteArray(), context);
        } catch (FunctionInvocationException e) {
            Throwable thrown = e.getCause() == null ? e : e.getCause();
            log.info("{} threw {}", request.getName(), thrown.toString());
            throw UserFailure.toStatus(thrown);
        } catch (ArrowPayloadException | IllegalArgumentException e) {
            throw Status.INVALID_ARGUMENT.withDescription(request.getName() + ": " + e.getMessage()).asRuntimeException();
        } catch (RuntimeException e) {
            log.warn("{} failed in the worker", request.getName(), e);
            throw Status.INTERNAL.withDescription(request.getName() + ": the worker failed: " + e).withCause(e)
                    .asRuntimeException();
        }
    }
}
