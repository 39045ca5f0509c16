package ai.chalk.compute.server.store;

import java.time.Instant;
import java.util.Optional;

/**
 * A sandbox as the server remembers it.
 *
 * @param seq           insertion order, used as the list cursor
 * @param id            the sandbox id
 * @param name          the user's name for it
 * @param state         its lifecycle state
 * @param image         the image it was asked to run ("" for the runtime's default)
 * @param runtime       the runtime that runs it
 * @param createdAt     when it was created
 * @param finishedAt    when it stopped, if it has
 * @param statusMessage why it is in its state, in a sentence
 * @param request       the create request as a serialised v1 {@code CreateSandboxRequest} (a v2 request is
 *                      recorded in its v1 form), for later inspection
 * @param containerSpec the sandbox's serialised {@code chalk.container.v1.ChalkContainerSpec}, as v2 shows it;
 *                      null for records written before the server kept it
 * @param buildId       the image build its image came from, when it was created from an image spec
 * @param environment   the environment it belongs to: only callers acting in it see it
 */
public record SandboxRecord(
        long seq,
        String id,
        Optional<String> name,
        SandboxState state,
        String image,
        String runtime,
        Instant createdAt,
        Optional<Instant> finishedAt,
        Optional<String> statusMessage,
        byte[] request,
        byte[] containerSpec,
        Optional<String> buildId,
        String environment) {}
