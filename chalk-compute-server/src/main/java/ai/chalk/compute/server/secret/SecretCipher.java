package ai.chalk.compute.server.secret;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Base64;
import java.util.Set;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * AES-256-GCM with the server's secrets key. Each value gets a fresh random 12-byte nonce, stored in front of its
 * ciphertext; the caller's associated data (which environment and name the value belongs to) is authenticated but
 * not stored, so a ciphertext copied into another row, or altered, fails to decrypt instead of yielding a value.
 *
 * <p>The key is a file of 32 random bytes, base64 on one line (as {@code openssl rand -base64 32} prints), that only
 * its owner may read: a key others can read must be treated as leaked, so it is refused.
 */
public final class SecretCipher {

    /** The default key file's name, in the data directory. */
    public static final String KEY_FILE_NAME = "secrets.key";

    private static final int KEY_BYTES = 32;
    private static final int NONCE_BYTES = 12;
    private static final int TAG_BITS = 128;
    private static final SecureRandom RANDOM = new SecureRandom();

    private final SecretKeySpec key;

    private SecretCipher(byte[] key) {
        this.key = new SecretKeySpec(key, "AES");
    }

    /** A cipher with this key (32 bytes), for tests and tools. */
    static SecretCipher of(byte[] key) {
        if (key.length != KEY_BYTES) {
            throw new IllegalArgumentException("an AES-256 key has " + KEY_BYTES + " bytes, not " + key.length);
        }
        return new SecretCipher(key.clone());
    }

    /**
     * The key in {@code file}, made first (mode 0600, from the first byte) when {@code create} and the file does not
     * exist yet.
     *
     * @throws IOException saying what is wrong with the file (missing, a link, readable by others, malformed) and how
     *                     to fix it
     */
    public static SecretCipher load(Path file, boolean create) throws IOException {
        if (create && !Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
            byte[] fresh = new byte[KEY_BYTES];
            RANDOM.nextBytes(fresh);
            try {
                Files.createFile(
                        file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
                Files.writeString(
                        file,
                        Base64.getEncoder().encodeToString(fresh) + "\n",
                        StandardCharsets.US_ASCII,
                        StandardOpenOption.WRITE,
                        StandardOpenOption.SYNC);
                return new SecretCipher(fresh);
            } catch (FileAlreadyExistsException e) {
                // another start made it meanwhile: read that one
            } finally {
                Arrays.fill(fresh, (byte) 0);
            }
        }
        if (!Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException("the secrets key file " + file + " does not exist: give an existing file of 32 random"
                    + " bytes in base64 (openssl rand -base64 32 > FILE; chmod 600 FILE)");
        }
        if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException("the secrets key file " + file + " is not a regular file (a link or a directory);"
                    + " give the key file itself");
        }
        Set<PosixFilePermission> mode = Files.getPosixFilePermissions(file, LinkOption.NOFOLLOW_LINKS);
        String shown = PosixFilePermissions.toString(mode);
        if (!shown.endsWith("------")) {
            throw new IOException("the secrets key file " + file + " is readable or writable by other users (mode "
                    + shown + "): treat the key as leaked unless you are sure it is not, and chmod 600 it; the server"
                    + " refuses a key others may read");
        }
        String text = Files.readString(file, StandardCharsets.US_ASCII).strip();
        byte[] key;
        try {
            key = Base64.getDecoder().decode(text);
        } catch (IllegalArgumentException e) {
            throw new IOException("the secrets key file " + file + " is not base64: it must hold 32 random bytes in"
                    + " base64 on one line (openssl rand -base64 32)");
        }
        if (key.length != KEY_BYTES) {
            throw new IOException("the secrets key file " + file + " holds " + key.length + " bytes; an AES-256 key"
                    + " has 32 (openssl rand -base64 32)");
        }
        return new SecretCipher(key);
    }

    /** {@code plaintext} encrypted: nonce, then ciphertext with its tag. */
    byte[] encrypt(String plaintext, String associatedData) {
        byte[] nonce = new byte[NONCE_BYTES];
        RANDOM.nextBytes(nonce);
        byte[] clear = plaintext.getBytes(StandardCharsets.UTF_8);
        try {
            Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
            c.init(Cipher.ENCRYPT_MODE, key, new GCMParameterSpec(TAG_BITS, nonce));
            c.updateAAD(associatedData.getBytes(StandardCharsets.UTF_8));
            byte[] sealed = c.doFinal(clear);
            return ByteBuffer.allocate(NONCE_BYTES + sealed.length)
                    .put(nonce)
                    .put(sealed)
                    .array();
        } catch (GeneralSecurityException e) {
            // AES-GCM is in every JDK: this is a broken JVM, and the message says nothing of the value
            throw new IllegalStateException(
                    "AES-GCM encryption failed: " + e.getClass().getSimpleName(), e);
        } finally {
            Arrays.fill(clear, (byte) 0);
        }
    }

    /**
     * The plaintext of {@code sealed}.
     *
     * @throws GeneralSecurityException when it was not sealed with this key and associated data, or was altered
     */
    String decrypt(byte[] sealed, String associatedData) throws GeneralSecurityException {
        if (sealed.length < NONCE_BYTES + TAG_BITS / 8) {
            throw new GeneralSecurityException("ciphertext too short");
        }
        Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
        c.init(Cipher.DECRYPT_MODE, key, new GCMParameterSpec(TAG_BITS, sealed, 0, NONCE_BYTES));
        c.updateAAD(associatedData.getBytes(StandardCharsets.UTF_8));
        byte[] clear = c.doFinal(sealed, NONCE_BYTES, sealed.length - NONCE_BYTES);
        try {
            return new String(clear, StandardCharsets.UTF_8);
        } finally {
            Arrays.fill(clear, (byte) 0);
        }
    }
}
