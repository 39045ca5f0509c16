package ai.chalk.compute.function.deploy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * What of a class path only tests need: the jars of test frameworks (JUnit, AssertJ, Mockito, Spring's test support,
 * Surefire's booter, ...) and the output directories of a build's test sources ({@code target/test-classes}, Gradle's
 * {@code build/classes/java/test}, IntelliJ's {@code out/test/...}). A function run by a test (a
 * {@code @SpringBootTest}) has the test's class path, but its workers need none of this: uploading it costs time and
 * bytes, and a worker booting the application must not find test configurations beside it.
 */
final class TestClassPath {

    /** Test frameworks' jars, by their Maven file name {@code artifactId-version.jar}. */
    private static final Pattern TEST_LIBRARY = Pattern.compile("(junit|junit-jupiter(-[a-z]+)?|junit-platform-[a-z-]+"
            + "|junit-vintage-engine|opentest4j|apiguardian-api|assertj-[a-z-]+|mockito-[a-z-]+|byte-buddy-agent"
            + "|hamcrest(-[a-z]+)?|spring-test|spring-boot-test(-autoconfigure)?|spring-boot-starter-test"
            + "|spring-boot-[a-z-]+-test|spring-grpc-test|grpc-testing|reactor-test|jsonassert|xmlunit-[a-z-]+"
            + "|awaitility(-[a-z]+)?|([a-z-]+-)?testcontainers(-[a-z-]+)?|surefire-[a-z-]+|common-java5"
            + "|archunit(-[a-z0-9-]+)?|wiremock(-[a-z-]+)?|rest-assured|kotest-[a-z-]+)-\\d[^/]*\\.jar");

    private TestClassPath() {}

    /**
     * The entries a function's workers may need.
     *
     * @param classPath      the class path, in order
     * @param keep           entries to keep whatever they are: those holding a class the functions need
     * @param testDirectories whether test output directories are left out too (only when {@code keep} names where
     *                        the functions are, else a directory may hold them)
     * @param leftOut        receives the entries left out
     * @return the other entries, in order
     */
    static List<Path> withoutTestEntries(
            List<Path> classPath, Set<Path> keep, boolean testDirectories, List<Path> leftOut) {
        List<Path> kept = new ArrayList<>();
        for (Path raw : classPath) {
            Path entry = raw.toAbsolutePath().normalize();
            boolean test = isTestLibrary(entry) || (testDirectories && isTestOutput(entry));
            if (test && !keep.contains(entry)) {
                leftOut.add(entry);
            } else {
                kept.add(raw);
            }
        }
        return kept;
    }

    /** A test framework's jar, or a module's test jar ({@code -tests.jar}). */
    static boolean isTestLibrary(Path entry) {
        Path name = entry.getFileName();
        if (name == null) {
            return false;
        }
        String file = name.toString();
        return TEST_LIBRARY.matcher(file).matches() || file.endsWith("-tests.jar");
    }

    /** A build tool's output directory for test sources. */
    static boolean isTestOutput(Path entry) {
        Path name = entry.getFileName();
        Path parent = entry.getParent();
        if (name == null || parent == null || parent.getFileName() == null) {
            return false;
        }
        String own = name.toString();
        String up = parent.getFileName().toString();
        Path grand = parent.getParent();
        String upUp = grand == null || grand.getFileName() == null
                ? ""
                : grand.getFileName().toString();
        if (own.equals("test-classes")) {
            return true; // Maven
        }
        boolean testSourceSet = own.toLowerCase(Locale.ROOT).startsWith("test")
                || own.toLowerCase(Locale.ROOT).endsWith("test");
        if (testSourceSet && upUp.equals("classes")) {
            return true; // Gradle: build/classes/<language>/test
        }
        if (testSourceSet && up.equals("resources") && upUp.equals("build")) {
            return true; // Gradle: build/resources/test
        }
        return up.equals("test") && (upUp.equals("out") || upUp.equals("bin")); // IntelliJ out/test/m, Eclipse
    }
}
