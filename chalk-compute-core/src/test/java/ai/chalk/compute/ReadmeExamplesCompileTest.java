package ai.chalk.compute;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every {@code ```java} block of the repository's README compiles against the SDK as it is, so that the documentation
 * cannot drift from the API. A block is a fragment, so it is wrapped before compiling: its type declarations (lines
 * starting {@code class}, {@code public class}, {@code interface}, {@code record} at column 0, to the next {@code }}
 * at column 0) become members of a class, the rest the body of a method of it; every package of the SDK is imported;
 * {@code client}, {@code sandbox}, {@code token} and {@code key} are fields the block may use or shadow; and a body
 * written {@code { ... }} stands for code the reader supplies.
 */
class ReadmeExamplesCompileTest {

    private static final Path README = Path.of("..", "README.md");
    private static final Pattern BLOCK = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL);
    private static final Pattern TYPE_START = Pattern.compile("^(public )?(final )?(class|interface|record|enum) .*");

    @TempDir
    Path out;

    @Test
    void everyJavaBlockOfTheReadmeCompiles() throws IOException {
        String readme = Files.readString(README, StandardCharsets.UTF_8);
        List<JavaFileObject> units = new ArrayList<>();
        List<Integer> firstLines = new ArrayList<>();
        String imports = imports();
        Matcher m = BLOCK.matcher(readme);
        while (m.find()) {
            int index = units.size();
            int firstLine = lineOf(readme, m.start(1));
            units.add(source("ReadmeBlock" + index, wrap(m.group(1), "ReadmeBlock" + index, imports)));
            firstLines.add(firstLine);
        }
        assertThat(units).as("the README has Java examples").hasSizeGreaterThan(5);

        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        try (StandardJavaFileManager files = javac.getStandardFileManager(diagnostics, Locale.ROOT, null)) {
            List<String> options = List.of(
                    "-classpath",
                    System.getProperty("java.class.path"),
                    "-d",
                    out.toString(),
                    "-proc:none",
                    "-Xlint:none");
            boolean ok = javac.getTask(null, files, diagnostics, options, null, units)
                    .call();
            List<String> errors = new ArrayList<>();
            for (Diagnostic<? extends JavaFileObject> d : diagnostics.getDiagnostics()) {
                if (d.getKind() != Diagnostic.Kind.ERROR) {
                    continue;
                }
                int block = units.indexOf(d.getSource());
                String where = block < 0
                        ? "?"
                        : "README.md block " + block + " (starting line " + firstLines.get(block) + "), wrapped line "
                                + d.getLineNumber();
                errors.add(where + ": " + d.getMessage(Locale.ROOT)
                        + (block < 0 ? "" : "\n    " + lineOfUnit(units.get(block), d.getLineNumber())));
            }
            assertThat(errors).as("README examples that do not compile").isEmpty();
            assertThat(ok).isTrue();
        }
    }

    /** A block as a class: its type declarations as members, its statements as a method's body. */
    static String wrap(String block, String name, String imports) {
        StringBuilder members = new StringBuilder();
        StringBuilder body = new StringBuilder();
        boolean inType = false;
        for (String line : block.replace("{ ... }", "{ throw new UnsupportedOperationException(); }")
                .split("\n", -1)) {
            if (!inType && TYPE_START.matcher(line).matches()) {
                inType = !line.stripTrailing().endsWith("}");
                members.append(line).append('\n');
            } else if (inType) {
                members.append(line).append('\n');
                inType = !line.equals("}");
            } else {
                body.append(line).append('\n');
            }
        }
        String head = imports + "abstract class " + name + " {\n"
                + "    ai.chalk.compute.sandbox.SandboxClient client;\n"
                + "    ai.chalk.compute.sandbox.Sandbox sandbox;\n"
                + "    String token;\n"
                + "    String key;\n"
                + members
                + "    void example() throws Exception {\n";
        return head + body + "    }\n}\n";
    }

    /** Every package of the SDK (read from its sources), and the JDK's the examples use. */
    private static String imports() throws IOException {
        Path root = Path.of("src", "main", "java");
        StringBuilder imports = new StringBuilder();
        try (Stream<Path> dirs = Files.walk(root)) {
            dirs.filter(Files::isDirectory)
                    .filter(dir -> {
                        try (Stream<Path> entries = Files.list(dir)) {
                            return entries.anyMatch(f -> f.toString().endsWith(".java"));
                        } catch (IOException e) {
                            throw new java.io.UncheckedIOException(e);
                        }
                    })
                    .map(dir -> root.relativize(dir).toString().replace('/', '.'))
                    .sorted()
                    .forEach(pkg -> imports.append("import ").append(pkg).append(".*;\n"));
        }
        for (String jdk : List.of("java.util", "java.util.concurrent", "java.time", "java.nio.file", "java.io")) {
            imports.append("import ").append(jdk).append(".*;\n");
        }
        return imports.toString();
    }

    private static int lineOf(String text, int offset) {
        int line = 1;
        for (int i = 0; i < offset; i++) {
            if (text.charAt(i) == '\n') {
                line++;
            }
        }
        return line;
    }

    private static String lineOfUnit(JavaFileObject unit, long number) {
        try {
            List<String> lines = unit.getCharContent(true).toString().lines().toList();
            return number >= 1 && number <= lines.size()
                    ? lines.get((int) number - 1).strip()
                    : "";
        } catch (IOException e) {
            return "";
        }
    }

    private static JavaFileObject source(String name, String code) {
        return new SimpleJavaFileObject(URI.create("string:///" + name + ".java"), JavaFileObject.Kind.SOURCE) {
            @Override
            public CharSequence getCharContent(boolean ignoreEncodingErrors) {
                return code;
            }
        };
    }
}
