package ai.chalk.compute.function.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.groups.Tuple.tuple;

import ai.chalk.compute.server.blob.BlobDigest;
import ai.chalk.compute.server.blob.BlobServiceV1;
import ai.chalk.compute.server.blob.BlobStore;
import ai.chalk.compute.server.worker.CodeSnapshots;
import com.acme.ClassPathProbe;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.opentest4j.AssertionFailedError;
import org.slf4j.Logger;
import org.springframework.boot.loader.tools.Layout;
import org.springframework.boot.loader.tools.Layouts;
import org.springframework.boot.loader.tools.Library;
import org.springframework.boot.loader.tools.LibraryScope;
import org.springframework.boot.loader.tools.Repackager;

/**
 * Snapshots of Spring Boot executable jars and wars built here as the Boot Maven plugin builds them (with its
 * library, spring-boot-loader-tools), from real classes and two real library jars of this test's class path.
 */
class ExecutableJarSnapshotTest {

    private static final Path SLF4J = jarOf(Logger.class);
    private static final Path OPENTEST4J = jarOf(AssertionFailedError.class);

    @TempDir
    Path dir;

    /** An application's {@code target/classes}: classes, resources, its own META-INF files, an empty directory. */
    private Path classes() throws IOException {
        Path classes = dir.resolve("target/classes");
        Path acme = Files.createDirectories(classes.resolve("com/acme"));
        for (String name : List.of("Orders.class", "Orders$Order.class", "Embedder.class", "ClassPathProbe.class")) {
            try (InputStream in = getClass().getResourceAsStream("/com/acme/" + name)) {
                Files.copy(in, acme.resolve(name));
            }
        }
        Files.writeString(classes.resolve("application.yml"), "greeting: hello\n");
        Path metaInf = Files.createDirectories(classes.resolve("META-INF/services"));
        Files.writeString(metaInf.resolve("com.acme.Plugin"), "com.acme.Embedder\n");
        Files.writeString(classes.resolve("META-INF/app.properties"), "a=1\n");
        Files.createDirectories(classes.resolve("static"));
        return classes;
    }

    /** The jar maven-jar-plugin makes of a classes directory: a manifest, the files, META-INF/maven. */
    private static Path plainJar(Path classes, Path jar, Instant time) throws IOException {
        Manifest manifest = new Manifest();
        manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        manifest.getMainAttributes().putValue("Created-By", "Maven JAR Plugin 3.4.2");
        Map<String, byte[]> files = new LinkedHashMap<>();
        try (Stream<Path> walk = Files.walk(classes)) {
            for (Path p : walk.filter(p -> !p.equals(classes)).sorted().toList()) {
                String name = classes.relativize(p).toString().replace(File.separatorChar, '/');
                files.put(
                        Files.isDirectory(p) ? name + "/" : name, Files.isDirectory(p) ? null : Files.readAllBytes(p));
            }
        }
        files.put("META-INF/maven/com.acme/app/pom.properties", "artifactId=app\n".getBytes(StandardCharsets.UTF_8));
        Files.createDirectories(jar.getParent());
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar), manifest)) {
            for (Map.Entry<String, byte[]> file : files.entrySet()) {
                JarEntry entry = new JarEntry(file.getKey());
                entry.setTime(time.toEpochMilli());
                out.putNextEntry(entry);
                if (file.getValue() != null) {
                    out.write(file.getValue());
                }
                out.closeEntry();
            }
        }
        return jar;
    }

    /** What {@code spring-boot:repackage} makes of a jar or war. */
    private static Path repackage(Path plain, Path executable, Layout layout, Map<Path, LibraryScope> libraries)
            throws IOException {
        Repackager repackager = new Repackager(plain.toFile());
        repackager.setMainClass(ClassPathProbe.class.getName());
        repackager.setLayout(layout);
        repackager.repackage(executable.toFile(), callback -> {
            for (Map.Entry<Path, LibraryScope> library : libraries.entrySet()) {
                callback.library(new Library(library.getKey().toFile(), library.getValue()));
            }
        });
        return executable;
    }

    /** An executable jar of {@link #classes()} with SLF4J and opentest4j, in that order (not the names' order). */
    private Path executableJar(Path classes, String name, Instant time) throws IOException {
        Map<Path, LibraryScope> libraries = new LinkedHashMap<>();
        libraries.put(SLF4J, LibraryScope.COMPILE);
        libraries.put(OPENTEST4J, LibraryScope.RUNTIME);
        return repackage(
                plainJar(classes, dir.resolve("plain/" + name), time), dir.resolve(name), new Layouts.Jar(), libraries);
    }

    @Test
    void anExecutableJarBecomesItsClassesThenItsLibrariesInClassPathIndexOrder() throws Exception {
        Path jar = executableJar(classes(), "app.jar", Instant.now());
        List<String> index = classPathIndex(jar);
        // the jar as Boot makes it: the launcher at the root, the jarmode tools among the libraries
        assertThat(index)
                .containsExactly(
                        "BOOT-INF/lib/" + SLF4J.getFileName(),
                        "BOOT-INF/lib/" + OPENTEST4J.getFileName(),
                        "BOOT-INF/lib/spring-boot-jarmode-tools-4.0.7.jar");
        try (JarFile file = new JarFile(jar.toFile())) {
            assertThat(file.getEntry("org/springframework/boot/loader/launch/JarLauncher.class"))
                    .isNotNull();
            assertThat(file.getEntry("META-INF/app.properties"))
                    .as("Boot leaves META-INF at the root")
                    .isNotNull();
            assertThat(file.getEntry("BOOT-INF/classes/com/acme/Orders.class")).isNotNull();
        }

        try (CodeSnapshot code = CodeSnapshot.of(List.of(jar))) {
            assertThat(code.entries())
                    .extracting(CodeEntry::name, CodeEntry::kind, CodeEntry::source)
                    .containsExactly(
                            tuple("000-classes.zip", CodeEntry.Kind.DIR, jar),
                            tuple("001-" + SLF4J.getFileName(), CodeEntry.Kind.JAR, jar),
                            tuple("002-" + OPENTEST4J.getFileName(), CodeEntry.Kind.JAR, jar));
            // a library is its own bytes: the jar Maven resolved, whatever the executable jar around it
            for (int i = 1; i <= 2; i++) {
                CodeEntry library = code.entries().get(i);
                Path original = i == 1 ? SLF4J : OPENTEST4J;
                assertThat(library.blob()).hasSameBinaryContentAs(original);
                assertThat(library.digest()).isEqualTo(Sha256.of(original));
                assertThat(library.size()).isEqualTo(Files.size(original));
            }
            assertThat(zipNames(code.entries().get(0).blob()))
                    .containsExactly(
                            "META-INF/",
                            "META-INF/app.properties",
                            "META-INF/services/",
                            "META-INF/services/com.acme.Plugin",
                            "application.yml",
                            "com/",
                            "com/acme/",
                            "com/acme/ClassPathProbe.class",
                            "com/acme/Embedder.class",
                            "com/acme/Orders$Order.class",
                            "com/acme/Orders.class",
                            "static/");
        }
    }

    @Test
    void theClassesHaveTheDigestOfTheExplodedDirectoryAndTheWholeSnapshotThatOfTheSameClassPath() throws Exception {
        Path classes = classes();
        Path jar = executableJar(classes, "app.jar", Instant.now());
        try (CodeSnapshot fromJar = CodeSnapshot.of(List.of(jar));
                CodeSnapshot exploded = CodeSnapshot.of(List.of(classes, SLF4J, OPENTEST4J))) {
            // java -jar app.jar and a run from target/classes (mvn spring-boot:run) share the blobs and the version
            assertThat(fromJar.entries().get(0).digest())
                    .isEqualTo(exploded.entries().get(0).digest());
            assertThat(fromJar.entries().get(0).blob())
                    .hasSameBinaryContentAs(exploded.entries().get(0).blob());
            assertThat(fromJar.manifest()).isEqualTo(exploded.manifest());
            assertThat(fromJar.digest()).isEqualTo(exploded.digest());
        }
    }

    @Test
    void theDigestIsStableAcrossSnapshotsAndRepackagingsAtOtherTimes() throws Exception {
        Path classes = classes();
        Path jar = executableJar(classes, "app.jar", Instant.parse("2026-01-02T03:04:05Z"));
        Path later = executableJar(classes, "later.jar", Instant.parse("2026-06-07T08:09:10Z"));
        assertThat(Files.readAllBytes(later)).isNotEqualTo(Files.readAllBytes(jar));
        try (CodeSnapshot first = CodeSnapshot.of(List.of(jar));
                CodeSnapshot again = CodeSnapshot.of(List.of(jar));
                CodeSnapshot rebuilt = CodeSnapshot.of(List.of(later))) {
            assertThat(again.digest()).isEqualTo(first.digest());
            assertThat(again.manifest()).isEqualTo(first.manifest());
            assertThat(rebuilt.digest()).isEqualTo(first.digest());
        }
    }

    @Test
    void aJvmStartedWithTheExpandedClassPathLoadsWhatTheLauncherGaveTheApplicationWithoutTheLauncher()
            throws Exception {
        Path jar = executableJar(classes(), "app.jar", Instant.now());
        String[] probes = {
            "com.acme.Orders",
            Logger.class.getName(),
            AssertionFailedError.class.getName(),
            "META-INF/app.properties",
            "META-INF/services/com.acme.Plugin",
            "/application.yml",
            "org.springframework.boot.loader.launch.JarLauncher"
        };

        // as the application sees its class path under Boot's launcher: java -jar app.jar
        Map<String, String> launched = probe(List.of("-jar", jar.toString()), probes);
        assertThat(launched.get("com.acme.Orders")).contains("app.jar").contains("BOOT-INF/classes");
        assertThat(launched.get(Logger.class.getName())).contains("BOOT-INF/lib/" + SLF4J.getFileName());
        assertThat(launched.get("META-INF/app.properties"))
                .as("seen at the jar's root")
                .endsWith("app.jar!/META-INF/app.properties");
        assertThat(launched.get("/application.yml"))
                .contains("BOOT-INF/classes")
                .endsWith("application.yml");
        assertThat(launched.get("org.springframework.boot.loader.launch.JarLauncher"))
                .isNotEqualTo("missing");

        // as a worker sees it: the snapshot uploaded, materialised by the server's own code, on a plain class path
        try (CodeSnapshot code = CodeSnapshot.of(List.of(jar))) {
            Path snapshot = materialise(code);
            List<String> classPath = Stream.of(
                            "000-classes.zip", "001-" + SLF4J.getFileName(), "002-" + OPENTEST4J.getFileName())
                    .map(name -> snapshot.resolve(name).toString())
                    .toList();
            Map<String, String> worker = probe(List.of("-cp", String.join(File.pathSeparator, classPath)), probes);
            String classesUrl = url(snapshot.resolve("000-classes.zip"));
            assertThat(worker.get("com.acme.Orders")).isEqualTo(classesUrl);
            assertThat(worker.get(Logger.class.getName()))
                    .isEqualTo(url(snapshot.resolve("001-" + SLF4J.getFileName())));
            assertThat(worker.get(AssertionFailedError.class.getName()))
                    .isEqualTo(url(snapshot.resolve("002-" + OPENTEST4J.getFileName())));
            assertThat(worker.get("META-INF/app.properties")).isEqualTo(classesUrl + "META-INF/app.properties");
            assertThat(worker.get("META-INF/services/com.acme.Plugin"))
                    .isEqualTo(classesUrl + "META-INF/services/com.acme.Plugin");
            assertThat(worker.get("/application.yml")).isEqualTo(classesUrl + "application.yml");
            assertThat(worker.get("org.springframework.boot.loader.launch.JarLauncher"))
                    .isEqualTo("missing");
        }
    }

    @Test
    void closeDeletesTheClassesZipAndTheLibrariesCopiedOut() throws Exception {
        Path jar = executableJar(classes(), "app.jar", Instant.now());
        List<Path> blobs;
        try (CodeSnapshot code = CodeSnapshot.of(List.of(jar))) {
            blobs = code.entries().stream().map(CodeEntry::blob).toList();
            assertThat(blobs).allSatisfy(blob -> assertThat(blob).exists());
        }
        assertThat(blobs).allSatisfy(blob -> assertThat(blob).doesNotExist());
        assertThat(jar).exists();
    }

    @Test
    void anExecutableWarBecomesItsClassesThenItsLibrariesAndItsProvidedLibraries() throws Exception {
        Path classes = classes();
        // the war maven-war-plugin makes: web content at the root, all of target/classes under WEB-INF/classes
        Path plain = dir.resolve("plain/app.war");
        Path webInf = Files.createDirectories(dir.resolve("war/WEB-INF"));
        copyTree(classes, webInf.resolve("classes"));
        Files.writeString(dir.resolve("war/index.html"), "<p>hello</p>\n");
        Files.createDirectories(dir.resolve("war/META-INF"));
        Files.writeString(dir.resolve("war/META-INF/context.xml"), "<Context/>\n");
        plainJar(dir.resolve("war"), plain, Instant.now());
        Map<Path, LibraryScope> libraries = new LinkedHashMap<>();
        libraries.put(SLF4J, LibraryScope.COMPILE);
        libraries.put(OPENTEST4J, LibraryScope.PROVIDED);
        Path war = repackage(plain, dir.resolve("app.war"), new Layouts.War(), libraries);
        try (JarFile file = new JarFile(war.toFile())) {
            assertThat(file.getEntry("WEB-INF/lib-provided/" + OPENTEST4J.getFileName()))
                    .isNotNull();
        }

        try (CodeSnapshot code = CodeSnapshot.of(List.of(war));
                CodeSnapshot exploded = CodeSnapshot.of(List.of(classes, SLF4J, OPENTEST4J))) {
            assertThat(code.entries())
                    .extracting(CodeEntry::name)
                    .containsExactly(
                            "000-classes.zip", "001-" + SLF4J.getFileName(), "002-" + OPENTEST4J.getFileName());
            // the root's web content and META-INF are not on the class path
            assertThat(code.entries().get(0).digest())
                    .isEqualTo(exploded.entries().get(0).digest());
            assertThat(code.digest()).isEqualTo(exploded.digest());
        }
    }

    @Test
    void librariesTheIndexLeavesOutComeFirstInArchiveOrderThenTheIndexedInIndexOrder() throws Exception {
        // an executable jar written by hand, to order its archive and its index differently
        Path jar = dir.resolve("hand.jar");
        Manifest manifest = new Manifest();
        manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        manifest.getMainAttributes().putValue("Spring-Boot-Classes", "BOOT-INF/classes/");
        manifest.getMainAttributes().putValue("Spring-Boot-Lib", "BOOT-INF/lib/");
        manifest.getMainAttributes().putValue("Spring-Boot-Classpath-Index", "BOOT-INF/classpath.idx");
        Map<String, byte[]> entries = new LinkedHashMap<>();
        entries.put("BOOT-INF/classes/a.txt", bytes("a"));
        for (String lib : List.of("c.jar", "b.jar", "spring-boot-jarmode-tools-4.0.7.jar", "d.jar", "a.jar")) {
            entries.put("BOOT-INF/lib/" + lib, bytes(lib));
        }
        entries.put("BOOT-INF/classpath.idx", bytes("""
                - "BOOT-INF/lib/a.jar"
                - "BOOT-INF/lib/b.jar"
                - "BOOT-INF/lib/gone.jar"
                - "BOOT-INF/lib/spring-boot-jarmode-tools-4.0.7.jar"
                """));
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar), manifest)) {
            for (Map.Entry<String, byte[]> entry : entries.entrySet()) {
                out.putNextEntry(new JarEntry(entry.getKey()));
                out.write(entry.getValue());
                out.closeEntry();
            }
        }
        try (CodeSnapshot code = CodeSnapshot.of(List.of(jar))) {
            assertThat(code.entries())
                    .extracting(CodeEntry::name)
                    .containsExactly("000-classes.zip", "001-c.jar", "002-d.jar", "003-a.jar", "004-b.jar");
            assertThat(code.entries().get(3).blob()).hasContent("a.jar");
        }
    }

    @Test
    void aFileThatIsNoZipAndAJarWithoutBootsManifestAreUploadedAsTheyAre() throws Exception {
        Path notAZip = Files.writeString(dir.resolve("notes.txt"), "not a zip");
        try (CodeSnapshot code = CodeSnapshot.of(List.of(notAZip, SLF4J))) {
            assertThat(code.entries())
                    .extracting(CodeEntry::name, CodeEntry::blob)
                    .containsExactly(tuple("000-notes.txt", notAZip), tuple("001-" + SLF4J.getFileName(), SLF4J));
        }
    }

    /** Runs {@link ClassPathProbe} in a new JVM; what it found, by name. */
    private static Map<String, String> probe(List<String> launch, String... names) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(launch);
        if (launch.contains("-cp")) {
            command.add(ClassPathProbe.class.getName());
        }
        command.addAll(List.of(names));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(process.exitValue()).as(output).isZero();
        Map<String, String> found = new LinkedHashMap<>();
        output.lines()
                .filter(line -> line.contains("="))
                .forEach(
                        line -> found.put(line.substring(0, line.indexOf('=')), line.substring(line.indexOf('=') + 1)));
        assertThat(found.keySet()).as(output).containsExactly(names);
        return found;
    }

    /** Uploads a snapshot to a real BlobService and materialises it as the server does; its directory. */
    private Path materialise(CodeSnapshot code) throws Exception {
        BlobStore store = new BlobStore(Files.createDirectories(dir.resolve("server/blobs")));
        String name = "blobs-" + UUID.randomUUID();
        Server server = InProcessServerBuilder.forName(name)
                .addService(new BlobServiceV1(store))
                .build()
                .start();
        ManagedChannel channel = InProcessChannelBuilder.forName(name).build();
        try {
            new CodeUploader(channel).upload(code);
        } finally {
            channel.shutdownNow();
            server.shutdownNow();
        }
        Path codeDir = dir.resolve("server/code");
        BlobDigest digest = BlobDigest.parse("code", code.digest());
        CodeSnapshots snapshots = new CodeSnapshots(store, codeDir);
        snapshots.materialise(digest, "/chalk/code");
        return codeDir.resolve(digest.hex());
    }

    private static List<String> classPathIndex(Path jar) throws IOException {
        try (JarFile file = new JarFile(jar.toFile());
                InputStream in = file.getInputStream(file.getEntry("BOOT-INF/classpath.idx"))) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8)
                    .lines()
                    .map(line -> line.substring(3, line.length() - 1))
                    .toList();
        }
    }

    private static List<String> zipNames(Path zip) throws IOException {
        List<String> names = new ArrayList<>();
        try (ZipInputStream in = new ZipInputStream(Files.newInputStream(zip))) {
            for (ZipEntry entry; (entry = in.getNextEntry()) != null; ) {
                names.add(entry.getName());
            }
        }
        return names;
    }

    private static void copyTree(Path from, Path to) throws IOException {
        try (Stream<Path> walk = Files.walk(from)) {
            for (Path p : walk.toList()) {
                Path target = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(target);
                } else {
                    Files.copy(p, target);
                }
            }
        }
    }

    /** A file's URL as class loaders write it: {@code file:/...}, a directory's with a trailing slash. */
    private static String url(Path path) {
        return path.toFile().toURI().toString();
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static Path jarOf(Class<?> type) {
        try {
            return Path.of(
                    type.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }
}
