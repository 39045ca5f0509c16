package ai.chalk.compute.function.deploy;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The code a function version runs: the application's class path entries, in order, each one blob (a jar's bytes,
 * or a directory's deterministic zip), named by a manifest whose digest is the <b>code digest</b>. The same classes
 * give the same digest on every run and machine.
 * <pre>{@code
 * try (CodeSnapshot code = CodeSnapshot.ofClassPath()) {
 *     System.out.println(code.digest());   // sha256:...
 * }
 * }</pre>
 * Directory zips, and the libraries of a Spring Boot executable jar, are written to temporary files, deleted by
 * {@link #close()}. Configuration files ({@code application.yml} ...) go with the classes, so replicas are configured
 * as the application is; one holding a credential as a written value is warned about, its value never logged.
 */
public final class CodeSnapshot implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(CodeSnapshot.class);

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
     * The snapshot of this JVM's class path ({@code java.class.path}), JDK entries and the jars of test frameworks
     * (JUnit, AssertJ, Mockito, Spring's test support, ...) excluded: run from a test, the code a function runs needs
     * none of them. An application started with {@code java -jar app.jar} from a Spring Boot executable jar has that
     * jar alone on its class path: it is expanded into what Boot's launcher puts there, as {@link #of(List)} says.
     * Test output directories ({@code target/test-classes}) are kept, as functions may be declared there; use
     * {@link #ofClassPath(Collection)} to leave them out unless the functions are there.
     *
     * @return the snapshot
     * @throws UncheckedIOException when an entry cannot be read
     */
    public static CodeSnapshot ofClassPath() {
        return ofClassPath(Set.of(), false);
    }

    /**
     * The snapshot of this JVM's class path for functions whose code is in the given classes: as
     * {@link #ofClassPath()}, and the output directories of the build's test sources ({@code target/test-classes},
     * Gradle's {@code build/classes/java/test}) are left out too unless one of the classes is there, so that a
     * function deployed from a {@code @SpringBootTest} runs the application's code, not its tests'.
     *
     * @param needed the classes the functions need, such as their declaring classes and the application class
     * @return the snapshot
     * @throws UncheckedIOException when an entry cannot be read
     */
    public static CodeSnapshot ofClassPath(Collection<Class<?>> needed) {
        Set<Path> keep = new HashSet<>();
        for (Class<?> type : needed) {
            location(type).ifPresent(keep::add);
        }
        return ofClassPath(keep, true);
    }

    private static CodeSnapshot ofClassPath(Set<Path> keep, boolean testDirectories) {
        List<Path> leftOut = new ArrayList<>();
        List<Path> entries = TestClassPath.withoutTestEntries(classPath(), keep, testDirectories, leftOut);
        if (!leftOut.isEmpty()) {
            log.debug("code snapshot: {} class path entries are for tests only, left out: {}", leftOut.size(), leftOut);
        }
        return of(entries);
    }

    private static List<Path> classPath() {
        return Arrays.stream(System.getProperty("java.class.path", "").split(File.pathSeparator))
                .filter(s -> !s.isBlank())
                .map(Path::of)
                .toList();
    }

    /** The class path entry a class was loaded from, when it is a directory or a jar. */
    private static Optional<Path> location(Class<?> type) {
        try {
            CodeSource source = type.getProtectionDomain().getCodeSource();
            if (source == null
                    || source.getLocation() == null
                    || !"file".equals(source.getLocation().getProtocol())) {
                return Optional.empty();
            }
            return Optional.of(
                    Path.of(source.getLocation().toURI()).toAbsolutePath().normalize());
        } catch (URISyntaxException | RuntimeException e) {
            return Optional.empty(); // a class from elsewhere keeps nothing
        }
    }

    /**
     * The snapshot of the given class path entries, in order. Entries that do not exist, and entries inside the
     * JDK ({@code java.home}), are left out.
     *
     * <p>A Spring Boot executable jar or war (its manifest names {@code Spring-Boot-Classes} or
     * {@code Spring-Boot-Lib}) becomes the entries its launcher would give the application, so a worker needs no
     * launcher: first its application classes as one directory entry {@code classes.zip}, holding the files of the
     * build's {@code target/classes} (the jar's {@code BOOT-INF/classes/} and the application's {@code META-INF}
     * files Boot leaves at the jar's root) and so having that directory's digest; then each nested library jar, in
     * the order of the jar's {@code classpath.idx}, with the library's own bytes and digest. The launcher's classes
     * and Boot's jarmode tools are left out. {@code java -jar app.jar} and a run from {@code target/classes} with
     * the same libraries in the same order ({@code mvn spring-boot:run}) give the same code digest.
     *
     * @param classPath jars and directories
     * @return the snapshot
     * @throws UncheckedIOException when an entry cannot be read
     */
    public static CodeSnapshot of(List<Path> classPath) {
        Objects.requireNonNull(classPath, "classPath");
        Path javaHome =
                Path.of(System.getProperty("java.home")).toAbsolutePath().normalize();
        Entries entries = new Entries();
        try {
            for (Path raw : classPath) {
                Path path = raw.toAbsolutePath().normalize();
                if (!Files.exists(path) || path.startsWith(javaHome)) {
                    continue;
                }
                if (Files.isDirectory(path)) {
                    entries.directory(path);
                    continue;
                }
                Optional<BootJar> boot = BootJar.open(path);
                if (boot.isEmpty()) {
                    entries.jar(path);
                    continue;
                }
                try (BootJar jar = boot.get()) {
                    entries.bootJar(jar);
                }
            }
            return new CodeSnapshot(entries.list, entries.workDir);
        } catch (IOException e) {
            deleteTree(entries.workDir);
            throw new UncheckedIOException("cannot snapshot the class path: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            deleteTree(entries.workDir);
            throw e;
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

    /** Deletes the temporary files: directory zips, and libraries copied out of an executable jar. */
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
                    .append("{\"name\":\"")
                    .append(e.name())
                    .append("\",\"kind\":\"")
                    .append(e.kind().manifestName())
                    .append("\",\"digest\":\"")
                    .append(e.digest())
                    .append("\",\"size\":")
                    .append(e.size())
                    .append('}');
        }
        return json.append("]}").toString();
    }

    /** The entries made so far, and the temporary directory holding the blobs made for them. */
    private static final class Entries {
        final List<CodeEntry> list = new ArrayList<>();
        Path workDir;

        /** A directory, as its deterministic zip. */
        void directory(Path directory) throws IOException {
            String name = position() + safe(fileName(directory)) + ".zip";
            Path zip = temporary(name);
            DeterministicZip.write(directory, zip);
            WrittenCredentials.warnAbout(zip, directory);
            add(name, CodeEntry.Kind.DIR, zip, directory);
        }

        /** A jar, as it is. */
        void jar(Path jar) throws IOException {
            add(position() + safe(fileName(jar)), CodeEntry.Kind.JAR, jar, jar);
        }

        /** An executable jar: its classes as a directory, then its libraries, each copied out of it. */
        void bootJar(BootJar boot) throws IOException {
            // named as target/classes is, so both give the same manifest
            String classes = position() + "classes.zip";
            Path zip = temporary(classes);
            boot.writeClasses(zip);
            WrittenCredentials.warnAbout(zip, boot.file());
            add(classes, CodeEntry.Kind.DIR, zip, boot.file());
            for (String library : boot.libraries()) {
                String name = position() + safe(BootJar.fileName(library));
                Path copy = temporary(name);
                boot.extract(library, copy);
                add(name, CodeEntry.Kind.JAR, copy, boot.file());
            }
        }

        private void add(String name, CodeEntry.Kind kind, Path blob, Path source) throws IOException {
            list.add(new CodeEntry(name, kind, Sha256.of(blob), Files.size(blob), blob, source));
        }

        private String position() {
            return String.format("%03d-", list.size());
        }

        private Path temporary(String name) throws IOException {
            if (workDir == null) {
                workDir = Files.createTempDirectory("chalk-code-");
            }
            return workDir.resolve(name);
        }
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
