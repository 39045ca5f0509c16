package ai.chalk.compute.code;

import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * One rich result, as code_sandboxes' {@code Result}: a MIME bundle (the representations of one displayed value,
 * such as {@code text/plain}, {@code text/html}, {@code image/png}, {@code application/json}).
 *
 * @param data           each representation's bytes by media type, in the order they came
 * @param isMainResult   whether it is the value of the snippet's last expression (Jupyter's {@code execute_result})
 *                       rather than something it displayed
 */
public record Result(Map<String, byte[]> data, boolean isMainResult) {

    public Result {
        data = Collections.unmodifiableMap(new LinkedHashMap<>(data));
    }

    /** The media types present. */
    public java.util.Set<String> formats() {
        return data.keySet();
    }

    /** A representation as text (UTF-8). */
    public Optional<String> textOf(String mediaType) {
        byte[] bytes = data.get(mediaType);
        return bytes == null ? Optional.empty() : Optional.of(new String(bytes, StandardCharsets.UTF_8));
    }

    /** {@code text/plain}: what the value's repr shows. */
    public Optional<String> text() {
        return textOf("text/plain");
    }

    /** {@code text/html}. */
    public Optional<String> html() {
        return textOf("text/html");
    }

    /** {@code application/json}, as its text. */
    public Optional<String> json() {
        return textOf("application/json");
    }

    /** {@code image/png}, its bytes. */
    public Optional<byte[]> png() {
        return Optional.ofNullable(data.get("image/png"));
    }

    @Override
    public String toString() {
        return "Result" + data.keySet() + (isMainResult ? " (main)" : "");
    }
}
