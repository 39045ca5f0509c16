package ai.chalk.compute.auth;

import ai.chalk.compute.error.FailedPreconditionException;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import org.yaml.snakeyaml.error.Mark;
import org.yaml.snakeyaml.error.MarkedYAMLException;
import org.yaml.snakeyaml.error.YAMLException;

/**
 * Reads the Chalk CLI's auth file, {@code ~/.chalk.yml}, as {@code chalk login} writes it and as Chalk's
 * own Go, Java and Python clients read it:
 * <pre>
 * tokens:
 *   /home/me/projects/fraud:        # a project directory (the one holding chalk.yaml)
 *     name: fraud
 *     clientId: token-...
 *     clientSecret: ts-...
 *     apiServer: https://api.chalk.ai
 *     activeEnvironment: dev
 *     validUntil: 2026-12-01T00:00:00Z
 *   default:                        # used outside any listed directory
 *     ...
 * </pre>
 * The file is {@code $XDG_CONFIG_HOME/.chalk.yml} when that variable is set, else {@code ~/.chalk.yml};
 * {@code .chalk.yaml} is accepted too. The entry whose key is the working directory or its nearest parent
 * wins, else {@code default}. Error messages never quote the file's contents: it holds secrets.
 */
final class ChalkYml {

    private static final Logger log = LoggerFactory.getLogger(ChalkYml.class);
    static final String DEFAULT_KEY = "default";
    private static final List<String> FILE_NAMES = List.of(".chalk.yml", ".chalk.yaml");
    /** Go's {@code time.Time.String()}: {@code 2006-01-02 15:04:05.999999999 -0700 MST}, and ISO variants. */
    private static final Pattern TIMESTAMP = Pattern.compile(
            "(\\d{4}-\\d{2}-\\d{2})[ T](\\d{2}:\\d{2}:\\d{2}(?:\\.\\d{1,9})?)\\s*(Z|[+-]\\d{2}:?\\d{2})?(?:\\s+\\S+)?");

    /** One login from the file. */
    record Entry(
            Path file,
            String key,
            Optional<String> clientId,
            Optional<String> clientSecret,
            Optional<String> apiServer,
            Optional<String> activeEnvironment,
            Optional<Instant> validUntil) {
        @Override
        public String toString() {
            return "ChalkYml.Entry[file=" + file + ", key=" + key + ", clientId=" + clientId.orElse("<none>")
                    + ", clientSecret=" + (clientSecret.isPresent() ? "****" : "<none>")
                    + ", apiServer=" + apiServer.orElse("<none>")
                    + ", activeEnvironment=" + activeEnvironment.orElse("<none>")
                    + ", validUntil=" + validUntil.map(Instant::toString).orElse("<none>") + "]";
        }
    }

    private ChalkYml() {}

    /** The auth file that exists for this environment and home directory, if any. */
    static Optional<Path> locate(Map<String, String> env, Path home) {
        String xdg = env.get("XDG_CONFIG_HOME");
        Path dir = xdg != null && !xdg.isBlank() ? Path.of(xdg.trim()) : home;
        if (dir == null) {
            return Optional.empty();
        }
        for (String name : FILE_NAMES) {
            Path candidate = dir.resolve(name);
            if (Files.isRegularFile(candidate)) {
                return Optional.of(candidate);
            }
        }
        return Optional.empty();
    }

    /**
     * The entry for a working directory: the nearest directory (itself or a parent) listed under
     * {@code tokens}, else {@code default}.
     *
     * @throws FailedPreconditionException when the file cannot be read or parsed
     */
    static Optional<Entry> load(Path file, Path workingDirectory) {
        Map<?, ?> tokens = readTokens(file);
        if (tokens.isEmpty()) {
            log.debug("{} has no 'tokens'; run 'chalk login'", file);
            return Optional.empty();
        }
        for (String key : candidateKeys(workingDirectory)) {
            Object value = tokens.get(key);
            if (value instanceof Map<?, ?> entry) {
                log.debug("using the login for '{}' from {}", key, file);
                return Optional.of(toEntry(file, key, entry));
            }
        }
        log.debug("{} has no login for {} or its parents, nor a '{}' one", file, workingDirectory, DEFAULT_KEY);
        return Optional.empty();
    }

    private static List<String> candidateKeys(Path workingDirectory) {
        List<String> keys = new ArrayList<>();
        if (workingDirectory != null) {
            Path real = null;
            try {
                real = workingDirectory.toRealPath();
            } catch (IOException | SecurityException e) {
                // the logical path is all we have
            }
            Path logical = workingDirectory.toAbsolutePath().normalize();
            for (Path dir = logical; dir != null; dir = dir.getParent()) {
                keys.add(dir.toString());
            }
            if (real != null && !real.equals(logical)) {
                for (Path dir = real; dir != null; dir = dir.getParent()) {
                    keys.add(dir.toString());
                }
            }
        }
        keys.add(DEFAULT_KEY);
        return keys;
    }

    private static Map<?, ?> readTokens(Path file) {
        warnIfOthersMayRead(file);
        Object root;
        try (Reader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            root = new Yaml(new SafeConstructor(new LoaderOptions())).load(reader);
        } catch (IOException e) {
            throw new FailedPreconditionException("cannot read the Chalk CLI auth file " + file + ": "
                    + e.getClass().getSimpleName());
        } catch (MarkedYAMLException e) {
            // the exception's own message quotes the offending line, which may hold a secret: keep only its position
            Mark mark = e.getProblemMark() != null ? e.getProblemMark() : e.getContextMark();
            String where =
                    mark == null ? "" : " at line " + (mark.getLine() + 1) + ", column " + (mark.getColumn() + 1);
            throw new FailedPreconditionException(
                    "cannot parse the Chalk CLI auth file " + file + where + "; run 'chalk login' to rewrite it");
        } catch (YAMLException e) {
            throw new FailedPreconditionException(
                    "cannot parse the Chalk CLI auth file " + file + "; run 'chalk login' to rewrite it");
        }
        if (root == null) {
            return Map.of();
        }
        if (!(root instanceof Map<?, ?> map)) {
            throw new FailedPreconditionException("the Chalk CLI auth file " + file
                    + " is not a mapping with a 'tokens' key; run 'chalk login' to rewrite it");
        }
        Object tokens = map.get("tokens");
        if (tokens == null) {
            return Map.of();
        }
        if (!(tokens instanceof Map<?, ?> tokenMap)) {
            throw new FailedPreconditionException("'tokens' in the Chalk CLI auth file " + file
                    + " is not a mapping; run 'chalk login' to rewrite it");
        }
        return tokenMap;
    }

    /**
     * The file holds client secrets: read by other users of the machine, they are theirs too. It is still used (the
     * Chalk CLI wrote it so), with a WARN saying how to close it.
     */
    private static void warnIfOthersMayRead(Path file) {
        PosixFileAttributeView view = Files.getFileAttributeView(file, PosixFileAttributeView.class);
        if (view == null) {
            return; // no POSIX modes here (Windows): nothing to warn about
        }
        try {
            Set<PosixFilePermission> mode = view.readAttributes().permissions();
            if (mode.contains(PosixFilePermission.GROUP_READ) || mode.contains(PosixFilePermission.OTHERS_READ)) {
                log.warn(
                        "{} holds client secrets and other users may read it ({}); run chmod 600 {}",
                        file,
                        PosixFilePermissions.toString(mode),
                        file);
            }
        } catch (IOException | SecurityException e) {
            // unreadable: reading it says so
        }
    }

    private static Entry toEntry(Path file, String key, Map<?, ?> entry) {
        return new Entry(
                file,
                key,
                text(entry.get("clientId")),
                text(entry.get("clientSecret")),
                text(entry.get("apiServer")),
                text(entry.get("activeEnvironment")),
                timestamp(entry.get("validUntil"), file, key));
    }

    private static Optional<String> text(Object value) {
        if (value == null || value instanceof Map || value instanceof List) {
            return Optional.empty();
        }
        String s = value.toString().trim();
        return s.isEmpty() ? Optional.empty() : Optional.of(s);
    }

    /** Accepts YAML timestamps, ISO-8601 and Go's {@code time.Time.String()} format; zone-less values are UTC. */
    static Optional<Instant> timestamp(Object value, Path file, String key) {
        if (value instanceof Date date) {
            return Optional.of(date.toInstant());
        }
        Optional<String> text = text(value);
        if (text.isEmpty()) {
            return Optional.empty();
        }
        String s = text.get();
        try {
            return Optional.of(OffsetDateTime.parse(s).toInstant());
        } catch (DateTimeParseException e) {
            // try the other forms
        }
        Matcher m = TIMESTAMP.matcher(s);
        if (m.matches()) {
            try {
                LocalDateTime local =
                        LocalDateTime.parse(m.group(1) + "T" + m.group(2), DateTimeFormatter.ISO_LOCAL_DATE_TIME);
                String offset = m.group(3);
                ZoneOffset zone = offset == null || offset.equals("Z")
                        ? ZoneOffset.UTC
                        : ZoneOffset.of(
                                offset.length() == 5 ? offset.substring(0, 3) + ":" + offset.substring(3) : offset);
                return Optional.of(local.toInstant(zone));
            } catch (DateTimeParseException e) {
                // fall through
            }
        }
        log.debug("ignoring validUntil of the login '{}' in {}: not a timestamp", key, file);
        return Optional.empty();
    }
}
