package ai.chalk.compute.server.image;

import io.grpc.Status;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import net.jpountz.lz4.LZ4FrameInputStream;

/**
 * Decompresses the LZ4 frames ({@code lz4.frame} in Python) that {@code uv_sync} steps carry their
 * {@code pyproject.toml} and {@code uv.lock} in, with a bound on the decompressed size so that a small request cannot
 * expand into gigabytes.
 */
public final class Lz4Frames {

    /** Largest decompressed file accepted. */
    static final int MAX_BYTES = 16 << 20;

    private Lz4Frames() {}

    /**
     * The decompressed bytes.
     *
     * @param field the request field they came from, for the error
     * @throws io.grpc.StatusRuntimeException INVALID_ARGUMENT naming the field when they are not an LZ4 frame or
     *                                        expand beyond {@value #MAX_BYTES} bytes
     */
    public static byte[] decompress(byte[] compressed, String field) {
        try (InputStream in = new LZ4FrameInputStream(new ByteArrayInputStream(compressed))) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buffer = new byte[64 * 1024];
            int n;
            while ((n = in.read(buffer)) > 0) {
                if (out.size() + n > MAX_BYTES) {
                    throw Status.INVALID_ARGUMENT
                            .withDescription(field + " expands to more than " + (MAX_BYTES >> 20) + " MiB")
                            .asRuntimeException();
                }
                out.write(buffer, 0, n);
            }
            return out.toByteArray();
        } catch (IOException | RuntimeException e) {
            if (e instanceof io.grpc.StatusRuntimeException sre) {
                throw sre;
            }
            throw Status.INVALID_ARGUMENT
                    .withDescription(field + " is not LZ4 frame data (as Python's" + " lz4.frame.compress writes): "
                            + e.getMessage())
                    .asRuntimeException();
        }
    }
}
