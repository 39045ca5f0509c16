package ai.chalk.compute.function.arrow;

import com.fasterxml.jackson.databind.ObjectMapper;

/** The one JSON mapper of the Arrow mapping: thread-safe once configured, and costly to create. */
final class Json {

    static final ObjectMapper MAPPER = new ObjectMapper();

    private Json() {}
}
