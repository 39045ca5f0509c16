package ai.chalk.compute.server.blob;

import io.grpc.Status;
import java.util.regex.Pattern;

/**
 * A validated blob digest, {@code sha256:} and 64 lowercase hex digits. Validation is what keeps a digest from
 * naming any file but its own under the store's directory.
 */
public record BlobDigest(String hex) {

    private static final Pattern FORM = Pattern.compile("sha256:([0-9a-f]{64})");

    /** Parses {@code sha256:<hex>}; INVALID_ARGUMENT naming {@code field} otherwise. */
    public static BlobDigest parse(String field, String digest) {
        var m = FORM.matcher(digest == null ? "" : digest);
        if (!m.matches()) {
            throw Status.INVALID_ARGUMENT
                    .withDescription(field + ": \"" + abbreviate(digest)
                            + "\" is not a blob digest; expected sha256: followed by 64 lowercase hex digits")
                    .asRuntimeException();
        }
        return new BlobDigest(m.group(1));
    }

    private static String abbreviate(String s) {
        if (s == null) {
            return "";
        }
        return s.length() > 80 ? s.substring(0, 80) + "..." : s;
    }

    @Override
    public String toString() {
        return "sha256:" + hex;
    }
}
