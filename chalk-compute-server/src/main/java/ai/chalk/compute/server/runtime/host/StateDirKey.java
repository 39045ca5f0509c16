package ai.chalk.compute.server.runtime.host;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** The short key of a state directory: the same directory always maps to the same containers and cgroups. */
public final class StateDirKey {

    private StateDirKey() {}

    /** Twelve hex digits of the SHA-256 of {@code stateDir}'s path. */
    public static String of(Path stateDir) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256")
                    .digest(stateDir.toString().getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest, 0, 6);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
