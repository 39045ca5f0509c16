package ai.chalk.compute.server.auth;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Optional;

/**
 * The client credentials of a server: an id, a secret shown once when it is made, the environment it acts in. Kept in
 * {@code <data-dir>/auth/clients.json} (mode 0600) with the secret only as a salted SHA-256 (a secret is 256 random
 * bits, so a fast hash is as strong as a slow one). The file is shared by the running server and the
 * {@code credentials} command: writes hold a lock and replace the file atomically, and the server re-reads it when it
 * changes, so a credential revoked from the command line stops working at once.
 */
public final class ClientCredentials {

    /** Client ids start with this, so they are told apart from secrets at a glance. */
    static final String ID_PREFIX = "client-";
    /** Client secrets start with this. */
    static final String SECRET_PREFIX = "secret-";

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final SecureRandom RANDOM = new SecureRandom();

    private final Path file;
    private final Path lockFile;
    private final Clock clock;
    private List<Stored> cached = List.of();
    private FileTime cachedAt = FileTime.fromMillis(-1);

    /** One credential as the file holds it. */
    record Stored(
            String id, String name, String environment, String salt, String hash, String createdAt, String revokedAt) {}

    /**
     * A credential as {@code list} shows it: no secret, not even hashed.
     *
     * @param revokedAt when it was revoked, if it was
     */
    public record Credential(
            String id, String name, String environment, Instant createdAt, Optional<Instant> revokedAt) {

        /** Whether it may still get tokens. */
        public boolean active() {
            return revokedAt.isEmpty();
        }
    }

    /** A credential just made, with its secret: shown once and never again. */
    public record Created(Credential credential, String secret) {
        @Override
        public String toString() {
            return "Created[" + credential + ", secret=****]";
        }
    }

    public ClientCredentials(Path authDir, Clock clock) throws IOException {
        PrivateFiles.directory(authDir);
        this.file = authDir.resolve("clients.json");
        this.lockFile = authDir.resolve("clients.lock");
        this.clock = clock;
    }

    /** Whether no credential was ever made (the server then makes the first one). */
    public synchronized boolean none() {
        return load().isEmpty();
    }

    /**
     * Makes a credential for {@code environment}.
     *
     * @param name what it is for, e.g. {@code ci} (shown by {@code list})
     */
    public Created create(String name, String environment) {
        Caller.checkEnvironment(environment);
        if (name == null || name.isBlank() || name.length() > 100) {
            throw new IllegalArgumentException("a credential needs a name of 1 to 100 characters, e.g. ci");
        }
        String id = ID_PREFIX + random(12);
        String secret = SECRET_PREFIX + random(32);
        String salt = random(16);
        Stored stored = new Stored(
                id,
                name.strip(),
                environment,
                salt,
                hash(salt, secret),
                clock.instant().toString(),
                null);
        update(all -> all.add(stored));
        return new Created(toCredential(stored), secret);
    }

    /** Every credential, revoked ones too, oldest first. */
    public synchronized List<Credential> list() {
        return load().stream().map(ClientCredentials::toCredential).toList();
    }

    /**
     * Revokes {@code id}: it gets no more tokens, and tokens it got stop working.
     *
     * @return whether an active credential was revoked
     */
    public boolean revoke(String id) {
        boolean[] revoked = {false};
        update(all -> {
            for (int i = 0; i < all.size(); i++) {
                Stored s = all.get(i);
                if (s.id().equals(id) && s.revokedAt() == null) {
                    all.set(
                            i,
                            new Stored(
                                    s.id(),
                                    s.name(),
                                    s.environment(),
                                    s.salt(),
                                    s.hash(),
                                    s.createdAt(),
                                    clock.instant().toString()));
                    revoked[0] = true;
                }
            }
        });
        return revoked[0];
    }

    /** The active credential whose id and secret these are; empty for anything else (unknown, revoked, wrong). */
    public synchronized Optional<Credential> check(String id, String secret) {
        for (Stored s : load()) {
            if (s.id().equals(id)) {
                boolean matches = MessageDigest.isEqual(
                        s.hash().getBytes(StandardCharsets.US_ASCII),
                        hash(s.salt(), secret).getBytes(StandardCharsets.US_ASCII));
                return matches && s.revokedAt() == null ? Optional.of(toCredential(s)) : Optional.empty();
            }
        }
        hash("", secret); // as long as a known id takes: the time does not tell which ids exist
        return Optional.empty();
    }

    /** Whether {@code id} is a credential that has not been revoked. */
    public synchronized boolean active(String id) {
        return load().stream().anyMatch(s -> s.id().equals(id) && s.revokedAt() == null);
    }

    private interface Change {
        void apply(List<Stored> all);
    }

    private synchronized void update(Change change) {
        try (FileChannel lock = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
                FileLock held = lock.lock()) {
            Files.setPosixFilePermissions(lockFile, PosixFilePermissions.fromString("rw-------"));
            cachedAt = FileTime.fromMillis(-1);
            List<Stored> all = new ArrayList<>(load());
            change.apply(all);
            PrivateFiles.write(file, JSON.writeValueAsString(all));
            cachedAt = FileTime.fromMillis(-1);
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "cannot update the client credentials in " + file + ": " + e.getMessage(), e);
        }
    }

    private List<Stored> load() {
        try {
            if (!Files.exists(file)) {
                return List.of();
            }
            FileTime modified = Files.getLastModifiedTime(file);
            if (!modified.equals(cachedAt)) {
                cached = List.copyOf(JSON.readValue(PrivateFiles.read(file), new TypeReference<List<Stored>>() {}));
                cachedAt = modified;
            }
            return cached;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the client credentials in " + file + ": " + e.getMessage(), e);
        }
    }

    private static Credential toCredential(Stored s) {
        return new Credential(
                s.id(),
                s.name(),
                s.environment(),
                Instant.parse(s.createdAt()),
                Optional.ofNullable(s.revokedAt()).map(Instant::parse));
    }

    private static String hash(String salt, String secret) {
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            sha.update(salt.getBytes(StandardCharsets.UTF_8));
            sha.update((byte) 0);
            return Base64.getUrlEncoder()
                    .withoutPadding()
                    .encodeToString(sha.digest(secret.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String random(int bytes) {
        byte[] b = new byte[bytes];
        RANDOM.nextBytes(b);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
    }
}
