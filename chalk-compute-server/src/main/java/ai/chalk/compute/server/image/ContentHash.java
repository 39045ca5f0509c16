package ai.chalk.compute.server.image;

import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import com.google.protobuf.CodedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The identity of an image spec's content: the hex SHA-256 of its deterministic serialisation (map entries sorted by
 * key), exactly as the client SDK computes {@code Image.contentHash()}, so that client and server name a spec alike.
 */
public final class ContentHash {

    private ContentHash() {}

    /** The spec's deterministic serialisation: the bytes the hash is taken of, and what the build store keeps. */
    public static byte[] canonicalBytes(ImageSpec spec) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(spec.getSerializedSize());
        try {
            CodedOutputStream out = CodedOutputStream.newInstance(bytes);
            out.useDeterministicSerialization();
            spec.writeTo(out);
            out.flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    /** The hex SHA-256 of {@code canonicalBytes}. */
    public static String of(byte[] canonicalBytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(canonicalBytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every Java platform", e);
        }
    }

    /** The spec's content hash. */
    public static String of(ImageSpec spec) {
        return of(canonicalBytes(spec));
    }
}
