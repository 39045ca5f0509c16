package ai.chalk.compute.server.http;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.InvalidKeyException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Instant;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Signs and checks the server's links: an HMAC-SHA256 over the method, the path (which names exactly one object) and
 * the expiry, so a link grants one method on one object until it expires and a changed character voids it. The key is
 * kept in the data directory (mode 0600), so links handed out before a restart still work after it.
 */
public final class LinkSigner {

    /** The key file's name in the data directory. */
    public static final String KEY_FILE_NAME = "links.key";
    /** The query parameter holding the expiry, in seconds since the epoch. */
    static final String EXPIRES = "X-Chalk-Expires";
    /** The query parameter holding the signature (base64url). */
    static final String SIGNATURE = "X-Chalk-Signature";

    private static final int KEY_BYTES = 32;
    private static final SecureRandom RANDOM = new SecureRandom();

    private final SecretKeySpec key;
    private final Clock clock;

    private LinkSigner(byte[] key, Clock clock) {
        this.key = new SecretKeySpec(key.clone(), "HmacSHA256");
        this.clock = clock;
    }

    /** A signer with this key (at least 32 bytes), telling time by {@code clock}. */
    public static LinkSigner of(byte[] key, Clock clock) {
        if (key.length < KEY_BYTES) {
            throw new IllegalArgumentException("a link key needs at least " + KEY_BYTES + " bytes, got " + key.length);
        }
        return new LinkSigner(key, clock);
    }

    /** Loads the key from {@code dir}/{@value #KEY_FILE_NAME}, making it (random, mode 0600) on first use. */
    public static LinkSigner load(Path dir, Clock clock) throws IOException {
        Path file = dir.resolve(KEY_FILE_NAME);
        if (!Files.exists(file)) {
            byte[] fresh = new byte[KEY_BYTES];
            RANDOM.nextBytes(fresh);
            try {
                Files.createFile(
                        file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
                Files.write(file, Base64.getEncoder().encode(fresh));
            } catch (FileAlreadyExistsException e) {
                // another start made it first: use theirs
            }
        }
        byte[] key = Base64.getDecoder()
                .decode(Files.readString(file, StandardCharsets.US_ASCII).trim());
        if (key.length < KEY_BYTES) {
            throw new IOException(file + " holds " + key.length + " bytes; a link key needs " + KEY_BYTES
                    + " (delete the file to make a new one; links handed out before stop working)");
        }
        return new LinkSigner(key, clock);
    }

    /** The query string ({@code X-Chalk-Expires=...&X-Chalk-Signature=...}) that grants {@code method} on {@code path}. */
    public String sign(String method, String path, Instant expires) {
        long seconds = expires.getEpochSecond();
        return EXPIRES + "=" + seconds + "&" + SIGNATURE + "=" + signature(method, path, seconds);
    }

    /**
     * Checks that {@code rawQuery} grants {@code method} on {@code path} now.
     *
     * @throws LinkRefusedException saying why not (missing, expired, or altered), for a 403
     */
    public void check(String method, String path, String rawQuery) throws LinkRefusedException {
        Map<String, String> query = parse(rawQuery);
        String expires = query.get(EXPIRES);
        String signature = query.get(SIGNATURE);
        if (expires == null || signature == null) {
            throw new LinkRefusedException("this URL is not a signed link (it lacks " + EXPIRES + " or " + SIGNATURE
                    + "): ask the server for a new one");
        }
        long seconds;
        try {
            seconds = Long.parseLong(expires);
        } catch (NumberFormatException e) {
            throw new LinkRefusedException("this link's " + EXPIRES + " is not a number: the link was altered");
        }
        // HEAD is GET without the body: a GET link answers both
        String signed = method.equals("HEAD") ? "GET" : method;
        byte[] expected = signature(signed, path, seconds).getBytes(StandardCharsets.US_ASCII);
        if (!MessageDigest.isEqual(expected, signature.getBytes(StandardCharsets.US_ASCII))) {
            throw new LinkRefusedException("this link's signature does not match: the link was altered, is for"
                    + " another method than " + method + ", or was signed by another server; ask for a new link");
        }
        Instant expiry = Instant.ofEpochSecond(seconds);
        if (!clock.instant().isBefore(expiry)) {
            throw new LinkRefusedException("this link expired at " + expiry + " (the server's time is "
                    + clock.instant().truncatedTo(java.time.temporal.ChronoUnit.SECONDS)
                    + "): ask the server for a new link");
        }
    }

    private String signature(String method, String path, long expires) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(key);
            byte[] sig = mac.doFinal((method + "\n" + path + "\n" + expires).getBytes(StandardCharsets.UTF_8));
            return Base64.getUrlEncoder().withoutPadding().encodeToString(sig);
        } catch (NoSuchAlgorithmException | InvalidKeyException e) {
            throw new IllegalStateException("HmacSHA256 is required of every Java platform", e);
        }
    }

    private static Map<String, String> parse(String rawQuery) {
        Map<String, String> out = new HashMap<>();
        if (rawQuery == null) {
            return out;
        }
        for (String pair : rawQuery.split("&")) {
            int eq = pair.indexOf('=');
            if (eq > 0) {
                // both values are plain ASCII (digits, base64url): nothing to decode
                out.putIfAbsent(pair.substring(0, eq), pair.substring(eq + 1));
            }
        }
        return out;
    }

    /** A link that does not grant what is asked: the message says why, for the HTTP client. */
    public static final class LinkRefusedException extends Exception {
        public LinkRefusedException(String message) {
            super(message);
        }
    }
}
