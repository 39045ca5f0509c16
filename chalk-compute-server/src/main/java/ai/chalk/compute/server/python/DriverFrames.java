package ai.chalk.compute.server.python;

import ai.chalk.compute.server.exec.EnvironmentBytes;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Reads the driver's frames (a type byte, a 4-byte big-endian length, the payload) from the process's stdout and
 * checks each against the server's limits before holding any of it: the driver runs as the sandbox's code, so a
 * snippet can write anything here. Output and report frames have a fixed cap; an artifact larger than the call's
 * limit, the server's, or what the artifact budget has left is read past and reported as skipped, never held.
 */
final class DriverFrames {

    /** The largest stdout/stderr piece: the driver sends at most 64 KiB at a time. */
    static final int MAX_OUTPUT_FRAME = 1 << 20;
    /** The largest report (ready, error, done, skipped): the driver clips tracebacks to 256 KiB. */
    static final int MAX_REPORT_FRAME = 1 << 20;
    /** The largest artifact header. */
    static final int MAX_ARTIFACT_HEADER = 64 * 1024;
    /** The largest artifact the server passes on, whatever a call asks. */
    static final long MAX_ARTIFACT_BYTES = 16L << 20;

    private static final int NAME_CHARS = 256;
    private static final Pattern MIME = Pattern.compile("[a-z0-9][a-z0-9.+-]{0,63}/[a-zA-Z0-9][a-zA-Z0-9.+-]{0,127}");
    private static final ObjectMapper JSON = new ObjectMapper();

    private final DataInputStream in;
    private final EnvironmentBytes.Account artifactBudget;

    DriverFrames(InputStream in, EnvironmentBytes.Account artifactBudget) {
        this.in = new DataInputStream(in);
        this.artifactBudget = artifactBudget;
    }

    /**
     * The next event, or null at the end of the stream between frames.
     *
     * @param artifactLimit the call's largest artifact (at most {@link #MAX_ARTIFACT_BYTES})
     * @throws DriverProtocolException when the bytes are not the protocol or break a limit
     * @throws IOException             when reading fails
     */
    @Nullable
    DriverEvent next(long artifactLimit) throws IOException {
        int type = in.read();
        if (type < 0) {
            return null;
        }
        long length = readLength();
        try {
            return switch (type) {
                case 'O', 'E' -> new DriverEvent.Output(type == 'E', payload(length, MAX_OUTPUT_FRAME, "output"));
                case 'A' -> artifact(length, artifactLimit);
                case 'R' -> new DriverEvent.Ready(text(json(length, "ready"), "python", 64));
                case 'S' -> skipped(json(length, "skipped"));
                case 'X' -> error(json(length, "error"));
                case 'C' -> done(json(length, "done"));
                default ->
                    throw new DriverProtocolException(
                            "unknown frame type 0x" + Integer.toHexString(type) + " (length " + length + ")");
            };
        } catch (EOFException e) {
            throw new DriverProtocolException("the output ended inside a frame");
        }
    }

    private long readLength() throws IOException {
        try {
            return Integer.toUnsignedLong(in.readInt());
        } catch (EOFException e) {
            throw new DriverProtocolException("the output ended inside a frame header");
        }
    }

    private byte[] payload(long length, int max, String what) throws IOException {
        if (length > max) {
            throw new DriverProtocolException(what + " frame of " + length + " bytes; at most " + max);
        }
        byte[] data = new byte[(int) length];
        in.readFully(data);
        return data;
    }

    private JsonNode json(long length, String what) throws IOException {
        byte[] data = payload(length, MAX_REPORT_FRAME, what);
        JsonNode node;
        try {
            node = JSON.readTree(data);
        } catch (IOException e) {
            throw new DriverProtocolException(what + " frame is not JSON");
        }
        if (node == null || !node.isObject()) {
            throw new DriverProtocolException(what + " frame is not a JSON object");
        }
        return node;
    }

    private DriverEvent artifact(long length, long artifactLimit) throws IOException {
        if (length < 4) {
            throw new DriverProtocolException("artifact frame of " + length + " bytes has no header");
        }
        long headerLength = Integer.toUnsignedLong(in.readInt());
        if (headerLength > MAX_ARTIFACT_HEADER || headerLength > length - 4) {
            throw new DriverProtocolException("artifact header of " + headerLength + " bytes in a frame of " + length);
        }
        JsonNode header = json(headerLength, "artifact header");
        String name = text(header, "name", NAME_CHARS);
        String mime = text(header, "mime", 200);
        if (!MIME.matcher(mime).matches()) {
            throw new DriverProtocolException("artifact " + name + " has no valid media type");
        }
        String role = text(header, "role", 32);
        if (!role.equals("execute_result") && !role.equals("display_data")) {
            throw new DriverProtocolException("artifact " + name + " has an unknown role");
        }
        JsonNode bundle = header.get("bundle");
        if (bundle == null || !bundle.canConvertToInt()) {
            throw new DriverProtocolException("artifact " + name + " has no bundle number");
        }
        boolean chart = "chart".equals(header.path("kind").asText(""));
        long size = length - 4 - headerLength;
        long limit = Math.min(artifactLimit, MAX_ARTIFACT_BYTES);
        if (size > limit) {
            skip(size);
            String reason = limit < artifactLimit
                    ? "larger than the server's limit of " + MAX_ARTIFACT_BYTES + " bytes"
                    : "larger than max_artifact_bytes (" + artifactLimit + ")";
            return new DriverEvent.Skipped(name, reason, size);
        }
        EnvironmentBytes.Refusal refused = artifactBudget.tryReserve(size);
        if (refused != null) {
            skip(size);
            return new DriverEvent.Skipped(
                    name,
                    "too many artifacts are held for clients that read slowly (" + artifactBudget.explain(refused)
                            + "); try again",
                    size);
        }
        try {
            byte[] data = new byte[(int) size];
            in.readFully(data);
            return new DriverEvent.Artifact(name, mime, role, bundle.asInt(), chart, data, size);
        } catch (IOException | RuntimeException e) {
            artifactBudget.release(size);
            throw e;
        }
    }

    /** Reads past {@code bytes} without holding them. */
    private void skip(long bytes) throws IOException {
        byte[] buffer = new byte[64 * 1024];
        long left = bytes;
        while (left > 0) {
            int n = in.read(buffer, 0, (int) Math.min(buffer.length, left));
            if (n < 0) {
                throw new EOFException();
            }
            left -= n;
        }
    }

    private static DriverEvent skipped(JsonNode node) throws DriverProtocolException {
        JsonNode size = node.get("size");
        if (size == null || !size.canConvertToLong()) {
            throw new DriverProtocolException("skipped frame has no size");
        }
        return new DriverEvent.Skipped(text(node, "name", NAME_CHARS), text(node, "reason", 512), size.asLong());
    }

    private static DriverEvent error(JsonNode node) throws DriverProtocolException {
        return new DriverEvent.CodeError(
                text(node, "ename", NAME_CHARS), text(node, "evalue", 64 * 1024), text(node, "traceback", 256 * 1024));
    }

    private static DriverEvent done(JsonNode node) throws DriverProtocolException {
        String status = text(node, "status", 16);
        if (!status.equals("ok")
                && !status.equals("error")
                && !status.equals("interrupted")
                && !status.equals("exit")) {
            throw new DriverProtocolException("done frame has an unknown status");
        }
        return new DriverEvent.Done(text(node, "id", 64), status);
    }

    /** A string field, clipped to {@code max} characters (the frame's size bounds it already). */
    private static String text(JsonNode node, String field, int max) throws DriverProtocolException {
        JsonNode value = node.get(field);
        if (value == null || !value.isTextual()) {
            throw new DriverProtocolException("frame field " + field + " is missing or not a string");
        }
        String s = value.asText();
        return s.length() <= max ? s : s.substring(0, max) + "... [" + (s.length() - max) + " characters cut]";
    }
}
