package ai.chalk.compute.function.deploy;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.stream.Stream;

/**
 * The code a function version runs: the application's class path entries, in order, each one blob (a jar's bytes,
 * or a directory's deterministic zip), named by a manifest whose digest is the <b>code digest</b>. The same classes
 * give the same digest on every run and machine.
 * <pre>{@code
 * try (CodeSnapshot code = CodeSnapshot.ofClassPath()) {
 *     System.out.println(code.digest());   // sha256:...
 * }
 * }</pre>
 * Directory zips are written to temporary files, deleted by {@link #close()}.
 */
public final class CodeSnapshot implements AutoCloseable {

    private final List<CodeEntry> entries;
    private final byte[] manifest;
    private final String digest;
    private final Path workDir;

    private CodeSnapshot(List<CodeEntry> entries, Path workDir) {
        this.entries = List.copyOf(entries);
        this.workDir = workDir;
        this.manifest = manifestJson(this.entries).getBytes(StandardCharsets.UTF_8);
        this.digest = Sha256.of(manifest);
    }

    /**
     * The snapshot of this JVM's class path ({@code java.class.path}), JDK entries excluded.
     *
     * @return the snapshot
     * @throws UncheckedIOException when an entry cannot be read
     */
    public static CodeSnapshot ofClassPath() {
        List<Path> paths = Arrays.stream(System.getProperty("java.class.path", "").split(File.pathSeparator))
                .filter(s -> !s.isBlank()).map(Path::of).toList();
        return of(paths);
    }

    /**
     * The snapshot of the given class path entries, in order. Entries that do not exist, and entries inside the
     * JDK ({@code java.home}), are left out.
     *
     * @param classPath jars and directories
     * @return the snapshot
     * @throws UncheckedIOException when an entry cannot be read
     */
    public static CodeSnapshot of(List<Path> classPath) {
        Objects.requireNonNull(classPath, "classPath");
        Path javaHome = Path.of(System.getProperty("java.home")).toAbsolutePath().normalize();
        Path workDir = null;
        try {
            List<CodeEntry> entries = new ArrayList<>();
            for (Path raw : classPath) {
                Path path = raw.toAbsolutePath().normalize();
                if (!Files.exists(path) || path.startsWith(javaHome)) {
                    continue;
                }
                String position = String.format("%03d-", entries.size());
                if (Files.isDirectory(path)) {
                    if (workDir == null) {
                        workDir = Files.createTempDirectory("chalk-code-");
                    }
                    String name = position + safe(fileName(path)) + ".zip";
                    Path zip = workDir.resolve(name);
                    DeterministicZip.write(path, zip);
                    entries.add(new CodeEntry(name, CodeEntry.Kind.DIR, Sha256.of(zip), Files.size(zip), zip, path));
                } else {
                    String name = position + safe(fileName(path));
                    entries.add(new CodeEntry(name, CodeEntry.Kind.JAR, Sha256.of(path), Files.size(path), path, path));
                }
            }
            return new CodeSnapshot(entries, workDir);
        } catch (IOException e) {
            deleteTree(workDir);
            throw new UncheckedIOException("cannot snapshot the class path: " + e.getMessage(), e);
        }
    }

    /** The blobs, in class path order. */
    public List<CodeEntry> entries() {
        return entries;
    }

    /** The manifest: UTF-8 JSON without whitespace, {@code {"entries":[{"name","kind","digest","size"},...]}}. */
    public byte[] manifest() {
        return manifest.clone();
    }

    /** The code digest: the manifest's {@code sha256:} digest. */
    public String digest() {
        return digest;
    }

    /** Deletes the temporary zips of directory entries. */
    @Override
    public void close() {
        deleteTree(workDir);
    }

    @Override
    public String toString() {
        return "CodeSnapshot[" + digest + ", " + entries.size() + " entries]";
    }

    static String manifestJson(List<CodeEntry> entries) {
        StringBuilder json = new StringBuilder("{\"entries\":[");
        for (int i = 0; i < entries.size(); i++) {
            CodeEntry e = entries.get(i);
            json.append(i == 0 ? "" : ",")
                    .append("{\"name\":\"").append(e.name())
                    .append("\",\"kind\":\"").append(e.kind().manifestName())
                    .append("\",\"digest\":\"").append(e.digest())
                    .append("\",\"size\":").append(e.size()).append('}');
        }
        return json.append("]}").toString();
    }

    private static String fileName(Path path) {
        Path name = path.getFileName();
        return name == null ? "root" : name.toString();
    }

    /** Letters, digits, {@code .}, {@code _} and {@code -}; anything else becomes {@code _}. */
    static String safe(String name) {
        String cleaned = name.replaceAll("[^A-Za-z0-9._-]", "_");
        return cleaned.startsWith(".") ? "_" + cleaned.substring(1) : cleaned;
    }

    private static void deleteTree(Path dir) {
        if (dir == null) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // a temporary directory left behind is harmless
        }
    }
}
