package ai.chalk.compute.function.deploy;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** {@code sha256:<hex>} digests, as blobs are named. */
final class Sha256 {

    private Sha256() {}

    static MessageDigest newDigest() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }

    static String of(byte[] bytes) {
        return format(newDigest().digest(bytes));
    }

    static String of(Path file) throws IOException {
        MessageDigest digest = newDigest();
        byte[] buffer = new byte[64 * 1024];
        try (InputStream in = Files.newInputStream(file)) {
            for (int n; (n = in.read(buffer)) > 0; ) {
                digest.update(buffer, 0, n);
            }
        }
        return format(digest.digest());
    }

    static String format(byte[] hash) {
        return "sha256:" + HexFormat.of().formatHex(hash);
    }
}
