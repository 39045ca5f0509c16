package ai.chalk.compute.evaluation.judge;

import ai.chalk.compute.proto.ai.v1.AiRouterServiceGrpc;
import ai.chalk.compute.proto.ai.v1.ForwardRequest;
import ai.chalk.compute.proto.ai.v1.ForwardResponse;
import com.google.protobuf.ByteString;
import io.grpc.Channel;
import io.grpc.StatusRuntimeException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/**
 * Chat completions through the Chalk Compute server's AI router ({@code chalk_compute.ai.v1.AiRouterService}), with
 * the caller's own Chalk identity: the server adds the provider's key, which this process never holds.
 */
final class RouterTransport implements ChatCompletions.Transport {

    private final Channel channel;

    RouterTransport(Channel channel) {
        this.channel = channel;
    }

    @Override
    public ChatCompletions.Reply send(byte[] body) {
        ForwardResponse response;
        try {
            response = AiRouterServiceGrpc.newBlockingStub(channel)
                    .withDeadlineAfter(5, TimeUnit.MINUTES)
                    .forward(ForwardRequest.newBuilder()
                            .setPath("chat/completions")
                            .setBody(ByteString.copyFrom(body))
                            .build());
        } catch (StatusRuntimeException e) {
            throw new JudgeException(
                    e.getStatus().getCode(),
                    "the server's AI router refused the judge's request: "
                            + e.getStatus().getDescription());
        }
        return new ChatCompletions.Reply(
                response.getStatus(),
                response.getBody().toString(StandardCharsets.UTF_8),
                response.hasRetryAfter() ? response.getRetryAfter() : null);
    }

    @Override
    public String describe() {
        return "the server's AI router";
    }
}
