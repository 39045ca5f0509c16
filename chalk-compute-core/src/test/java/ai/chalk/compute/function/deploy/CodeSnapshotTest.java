package ai.chalk.compute.function.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.auth.LogCapture;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.TimeZone;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CodeSnapshotTest {

    @TempDir
    Path dir;

    /** A class directory with real class files, and a jar. */
    static List<Path> classPath(Path dir) throws IOException {
        Path classes = dir.resolve("target/classes");
        Path acme = Files.createDirectories(classes.resolve("com/acme"));
        for (String name : List.of("Orders.class", "Embedder.class", "Orders$Order.class")) {
            try (InputStream in = CodeSnapshotTest.class.getResourceAsStream("/com/acme/" + name)) {
                Files.copy(in, acme.resolve(name));
            }
        }
        Files.writeString(Files.createDirectories(classes.resolve("META-INF")).resolve("app.properties"), "a=1\n");
        Path jar = dir.resolve("lib/some lib-1.0.jar");
        Files.createDirectories(jar.getParent());
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar))) {
            out.putNextEntry(new JarEntry("x/Y.txt"));
            out.write("hello".getBytes(StandardCharsets.UTF_8));
            out.closeEntry();
        }
        return List.of(classes, jar, dir.resolve("does-not-exist"));
    }

    @Test
    void theSameClassesGiveTheSameDigestWhateverTheTimestampsOrTimeZone() throws Exception {
        List<Path> classPath = classPath(dir);
        String first;
        byte[] manifest;
        try (CodeSnapshot code = CodeSnapshot.of(classPath)) {
            first = code.digest();
            manifest = code.manifest();
        }
        Files.setLastModifiedTime(
                dir.resolve("target/classes/com/acme/Orders.class"),
                FileTime.from(Instant.now().plusSeconds(3600)));
        TimeZone zone = TimeZone.getDefault();
        TimeZone.setDefault(TimeZone.getTimeZone("Pacific/Kiritimati"));
        try (CodeSnapshot again = CodeSnapshot.of(classPath)) {
            assertThat(again.digest()).isEqualTo(first);
            assertThat(again.manifest()).isEqualTo(manifest);
        } finally {
            TimeZone.setDefault(zone);
        }
    }

    @Test
    void theManifestListsEveryEntryInOrderWithoutWhitespace() throws Exception {
        try (CodeSnapshot code = CodeSnapshot.of(classPath(dir))) {
            List<CodeEntry> entries = code.entries();
            assertThat(entries)
                    .extracting(CodeEntry::name, CodeEntry::kind)
                    .containsExactly(
                            org.assertj.core.groups.Tuple.tuple("000-classes.zip", CodeEntry.Kind.DIR),
                            org.assertj.core.groups.Tuple.tuple("001-some_lib-1.0.jar", CodeEntry.Kind.JAR));
            CodeEntry jar = entries.get(1);
            assertThat(jar.blob()).isEqualTo(dir.resolve("lib/some lib-1.0.jar"));
            assertThat(jar.size()).isEqualTo(Files.size(jar.blob()));
            assertThat(jar.digest()).isEqualTo(Sha256.of(Files.readAllBytes(jar.blob())));
            CodeEntry classes = entries.get(0);
            String expected = "{\"entries\":[{\"name\":\"000-classes.zip\",\"kind\":\"dir\",\"digest\":\""
                    + classes.digest() + "\",\"size\":" + classes.size() + "},{\"name\":\"001-some_lib-1.0.jar\","
                    + "\"kind\":\"jar\",\"digest\":\"" + jar.digest() + "\",\"size\":" + jar.size() + "}]}";
            assertThat(new String(code.manifest(), StandardCharsets.UTF_8)).isEqualTo(expected);
            assertThat(code.digest())
                    .isEqualTo(Sha256.of(expected.getBytes(StandardCharsets.UTF_8)))
                    .matches("sha256:[0-9a-f]{64}");
        }
    }

    @Test
    void aDirectoryZipIsSortedWithDirectoriesAndFixedTimes() throws Exception {
        try (CodeSnapshot code = CodeSnapshot.of(classPath(dir))) {
            Path zip = code.entries().get(0).blob();
            List<String> names = new ArrayList<>();
            try (ZipInputStream in = new ZipInputStream(Files.newInputStream(zip))) {
                for (ZipEntry entry; (entry = in.getNextEntry()) != null; ) {
                    names.add(entry.getName());
                    assertThat(entry.getTimeLocal()).isEqualTo(LocalDateTime.of(1980, 1, 1, 0, 0));
                    assertThat(entry.getExtra()).isNull();
                    assertThat(entry.getMethod()).isEqualTo(ZipEntry.DEFLATED);
                    if (entry.getName().equals("com/acme/Orders.class")) {
                        assertThat(in.readAllBytes())
                                .isEqualTo(Files.readAllBytes(dir.resolve("target/classes/com/acme/Orders.class")));
                    }
                }
            }
            try (java.util.zip.ZipFile file = new java.util.zip.ZipFile(zip.toFile())) { // the central directory agrees
                assertThat(file.size()).isEqualTo(names.size());
                ZipEntry orders = file.getEntry("com/acme/Orders.class");
                assertThat(orders.getExtra()).isNull();
                assertThat(orders.getTimeLocal()).isEqualTo(LocalDateTime.of(1980, 1, 1, 0, 0));
                try (InputStream in = file.getInputStream(orders)) {
                    assertThat(in.readAllBytes())
                            .isEqualTo(Files.readAllBytes(dir.resolve("target/classes/com/acme/Orders.class")));
                }
            }
            assertThat(names)
                    .containsExactly(
                            "META-INF/",
                            "META-INF/app.properties",
                            "com/",
                            "com/acme/",
                            "com/acme/Embedder.class",
                            "com/acme/Orders$Order.class",
                            "com/acme/Orders.class");
        }
    }

    @Test
    void jdkEntriesAreLeftOutAndCloseDeletesTheZips() throws Exception {
        List<Path> classPath = new ArrayList<>(classPath(dir));
        classPath.add(0, Path.of(System.getProperty("java.home"), "lib"));
        Path zip;
        try (CodeSnapshot code = CodeSnapshot.of(classPath)) {
            assertThat(code.entries())
                    .extracting(CodeEntry::name)
                    .containsExactly("000-classes.zip", "001-some_lib-1.0.jar");
            zip = code.entries().get(0).blob();
            assertThat(zip).exists();
        }
        assertThat(zip).doesNotExist();
    }

    @Test
    void testFrameworksAndTestOutputAreRecognisedAsTheBuildToolsLayThemOut() {
        for (String jar : List.of(
                "junit-jupiter-api-5.13.4.jar",
                "junit-platform-launcher-1.13.4.jar",
                "opentest4j-1.3.0.jar",
                "assertj-core-3.27.7.jar",
                "mockito-core-5.20.0.jar",
                "mockito-junit-jupiter-5.20.0.jar",
                "byte-buddy-agent-1.17.8.jar",
                "spring-test-7.0.2.jar",
                "spring-boot-test-4.0.7.jar",
                "spring-boot-test-autoconfigure-4.0.7.jar",
                "spring-boot-micrometer-tracing-test-4.0.7.jar",
                "awaitility-4.3.0.jar",
                "hamcrest-3.0.jar",
                "surefire-booter-3.5.6.jar",
                "testcontainers-2.0.5.jar",
                "orders-1.0-tests.jar")) {
            assertThat(TestClassPath.isTestLibrary(Path.of("/m2", jar))).as(jar).isTrue();
        }
        for (String jar : List.of(
                "byte-buddy-1.17.8.jar",
                "spring-boot-4.0.7.jar",
                "jackson-databind-2.20.jar",
                "junitparser-1.0.jar",
                "contest-1.0.jar",
                "guava-33.5.0-jre.jar")) {
            assertThat(TestClassPath.isTestLibrary(Path.of("/m2", jar))).as(jar).isFalse();
        }
        for (String dir : List.of(
                "/app/target/test-classes",
                "/app/build/classes/java/test",
                "/app/build/classes/kotlin/integrationTest",
                "/app/build/resources/test",
                "/app/out/test/app")) {
            assertThat(TestClassPath.isTestOutput(Path.of(dir))).as(dir).isTrue();
        }
        for (String dir : List.of(
                "/app/target/classes",
                "/app/build/classes/java/main",
                "/app/build/resources/main",
                "/app/out/production/app")) {
            assertThat(TestClassPath.isTestOutput(Path.of(dir))).as(dir).isFalse();
        }
    }

    @Test
    void aTestEntryHoldingANeededClassIsKept() {
        List<Path> classPath = List.of(
                Path.of("/app/target/classes"),
                Path.of("/app/target/test-classes"),
                Path.of("/m2/junit-jupiter-api-5.13.4.jar"),
                Path.of("/m2/guava-33.5.0-jre.jar"));
        List<Path> leftOut = new ArrayList<>();
        assertThat(TestClassPath.withoutTestEntries(classPath, java.util.Set.of(), true, leftOut))
                .containsExactly(Path.of("/app/target/classes"), Path.of("/m2/guava-33.5.0-jre.jar"));
        assertThat(leftOut)
                .containsExactly(Path.of("/app/target/test-classes"), Path.of("/m2/junit-jupiter-api-5.13.4.jar"));
        assertThat(TestClassPath.withoutTestEntries(
                        classPath, java.util.Set.of(Path.of("/app/target/test-classes")), true, new ArrayList<>()))
                .containsExactly(
                        Path.of("/app/target/classes"),
                        Path.of("/app/target/test-classes"),
                        Path.of("/m2/guava-33.5.0-jre.jar"));
        assertThat(TestClassPath.withoutTestEntries(classPath, java.util.Set.of(), false, new ArrayList<>()))
                .as("without knowing where the functions are, test output directories stay")
                .contains(Path.of("/app/target/test-classes"))
                .doesNotContain(Path.of("/m2/junit-jupiter-api-5.13.4.jar"));
    }

    @Test
    void thisTestsOwnClassPathIsSnapshotWithoutItsTestFrameworks() {
        try (CodeSnapshot all = CodeSnapshot.ofClassPath();
                CodeSnapshot sdkOnly = CodeSnapshot.ofClassPath(List.of(CodeSnapshot.class));
                CodeSnapshot withTests =
                        CodeSnapshot.ofClassPath(List.of(CodeSnapshot.class, CodeSnapshotTest.class))) {
            assertThat(all.entries())
                    .extracting(CodeEntry::name)
                    .noneMatch(n -> n.contains("junit") || n.contains("assertj") || n.contains("surefire"))
                    .anyMatch(n -> n.endsWith("-test-classes.zip"))
                    .anyMatch(n -> n.endsWith("-classes.zip") && !n.endsWith("-test-classes.zip"));
            assertThat(sdkOnly.entries())
                    .extracting(CodeEntry::name)
                    .noneMatch(n -> n.endsWith("-test-classes.zip"))
                    .noneMatch(n -> n.contains("junit"));
            assertThat(withTests.entries()).extracting(CodeEntry::name).anyMatch(n -> n.endsWith("-test-classes.zip"));
        }
    }

    @Test
    void credentialsWrittenInTheConfigurationAreWarnedAboutWithoutTheirValues() throws IOException {
        List<Path> classPath = classPath(dir);
        Path classes = classPath.get(0);
        Files.writeString(classes.resolve("application.yml"), """
                spring:
                  datasource:
                    url: jdbc:postgresql://db/orders
                    username: orders
                    password: hunter2-in-yaml
                chalk.compute.client-secret: ${CHALK_CLIENT_SECRET}
                ---
                app:
                  keys:
                    - api-key: k-in-a-list
                """);
        Files.writeString(
                Files.createDirectories(classes.resolve("config")).resolve("application-prod.properties"),
                "jwt.secret=s3cret-in-properties\nserver.ssl.key-store-password=${KS}\ntoken-uri=https://x\n"
                        + "aws.secret-key=k3y-in-properties\n");
        try (LogCapture logs = new LogCapture(WrittenCredentials.class.getName());
                CodeSnapshot code = CodeSnapshot.of(classPath)) {
            assertThat(code.entries()).hasSize(2);
            assertThat(logs.lines())
                    .anyMatch(
                            l -> l.startsWith("WARN " + classes + "!/application.yml holds spring.datasource.password,"
                                    + " app.keys[0].api-key as written values"))
                    .anyMatch(l -> l.startsWith("WARN " + classes
                            + "!/config/application-prod.properties holds aws.secret-key, jwt.secret as" + " written"))
                    .hasSize(2);
            assertThat(logs.all()).doesNotContain("hunter2", "k-in-a-list", "s3cret", "k3y", "CHALK_CLIENT_SECRET");
        }
        try (LogCapture logs = new LogCapture(WrittenCredentials.class.getName());
                CodeSnapshot again = CodeSnapshot.of(classPath)) {
            assertThat(logs.lines()).as("once per file and JVM").isEmpty();
        }
    }
}
