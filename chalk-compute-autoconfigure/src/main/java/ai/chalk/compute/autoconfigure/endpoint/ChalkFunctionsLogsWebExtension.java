package ai.chalk.compute.autoconfigure.endpoint;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.error.FunctionNotFoundException;
import ai.chalk.compute.function.deploy.FunctionDeployer;
import ai.chalk.compute.function.deploy.FunctionLogLine;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.actuate.endpoint.web.annotation.EndpointWebExtension;

/**
 * {@code /actuator/chalkfunctions/{name}/logs}: what a deployed function's replicas wrote lately (its prints and
 * console log lines, oldest first), read from the server its application deploys to; {@code ?limit=N} for up to
 * {@value FunctionDeployer#MAX_LOG_LINES} lines (100 by default). Answers 404 for a function the server does not
 * have, 503 with the reason when the server cannot be reached.
 */
@EndpointWebExtension(endpoint = ChalkFunctionsEndpoint.class)
public class ChalkFunctionsLogsWebExtension {

    private final FunctionDeployer functions;

    /**
     * @param functions reads functions' logs from the server
     */
    public ChalkFunctionsLogsWebExtension(FunctionDeployer functions) {
        this.functions = Objects.requireNonNull(functions, "functions");
    }

    /**
     * A function's recent logs.
     *
     * @param name  the function's name
     * @param part  {@code logs}
     * @param limit how many lines at most, or {@code null} for 100
     * @return the lines, or an error with its reason
     */
    @ReadOperation
    public WebEndpointResponse<Object> logs(@Selector String name, @Selector String part, @Nullable Integer limit) {
        if (!part.equals("logs")) {
            return new WebEndpointResponse<>(WebEndpointResponse.STATUS_NOT_FOUND);
        }
        try {
            List<LineDescriptor> lines = functions.logs(name, limit == null ? 100 : limit).stream()
                    .map(LineDescriptor::of)
                    .toList();
            return new WebEndpointResponse<>(new LogsDescriptor(name, lines));
        } catch (IllegalArgumentException e) {
            return new WebEndpointResponse<>(new Problem(e.getMessage()), WebEndpointResponse.STATUS_BAD_REQUEST);
        } catch (FunctionNotFoundException e) {
            return new WebEndpointResponse<>(new Problem(e.getMessage()), WebEndpointResponse.STATUS_NOT_FOUND);
        } catch (ChalkComputeException e) {
            return new WebEndpointResponse<>(new Problem(e.getMessage()), 503);
        }
    }

    /**
     * A function's recent logs.
     *
     * @param function the function
     * @param lines    its lines, oldest first
     */
    public record LogsDescriptor(String function, List<LineDescriptor> lines) {}

    /**
     * One line.
     *
     * @param time     when the server read it (ISO-8601)
     * @param replica  the replica that wrote it
     * @param function the function whose call wrote it, or {@code null} for what the replica wrote outside calls
     * @param stream   {@code stdout} or {@code stderr}
     * @param text     the line
     */
    public record LineDescriptor(
            String time, String replica, @Nullable String function, String stream, String text) {

        static LineDescriptor of(FunctionLogLine line) {
            return new LineDescriptor(
                    line.time().toString(), line.replica(), line.function().orElse(null), line.stream(), line.text());
        }
    }

    /**
     * Why the logs cannot be shown.
     *
     * @param error the reason
     */
    public record Problem(String error) {}
}
