package ai.chalk.compute.function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.File;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Classes compiled without {@code -parameters} keep no parameter names; @Param supplies them. */
class MissingParameterNamesTest {

    @Test
    void withoutParameterNamesRegistrationSaysHowToKeepThem(@TempDir Path dir) throws Exception {
        Class<?> type = compileWithoutParameterNames(dir, "NoNames", """
                package gen;
                import ai.chalk.compute.function.ChalkFunction;
                public class NoNames {
                    @ChalkFunction
                    public static int add(int a, int b) { return a + b; }
                }
                """);
        assertThat(type.getMethod("add", int.class, int.class)
                        .getParameters()[0]
                        .isNamePresent())
                .isFalse();

        assertThatThrownBy(() -> new FunctionRegistry().register(type))
                .isExactlyInstanceOf(FunctionSignatureException.class)
                .hasMessage("gen.NoNames.add(int, int): parameter names were not compiled into the class file; compile "
                        + "with -parameters (Maven: <maven.compiler.parameters>true</maven.compiler.parameters>) or name "
                        + "each parameter with @Param(\"name\")");
    }

    @Test
    void paramAnnotationsNameParametersWithoutTheCompilerFlag(@TempDir Path dir) throws Exception {
        Class<?> type = compileWithoutParameterNames(dir, "Named", """
                package gen;
                import ai.chalk.compute.function.ChalkFunction;
                import ai.chalk.compute.function.Param;
                public class Named {
                    @ChalkFunction
                    public static int add(@Param("left") int a, @Param("right") int b) { return a + b; }
                }
                """);
        FunctionRegistry registry = new FunctionRegistry();
        registry.register(type);
        FunctionDefinition add = registry.get("add").definition();
        assertThat(add.parameters()).extracting(FunctionParameter::name).containsExactly("left", "right");
        assertThat(add.signature()).isEqualTo("gen.Named.add(int left, int right)");
        assertThat(registry.get("add").invoke(1, 2)).isEqualTo(3);
    }

    private Class<?> compileWithoutParameterNames(Path dir, String name, String source) throws Exception {
        Path file = dir.resolve("gen").resolve(name + ".java");
        Files.createDirectories(file.getParent());
        Files.writeString(file, source);
        String sdkClasses = new File(ChalkFunction.class
                        .getProtectionDomain()
                        .getCodeSource()
                        .getLocation()
                        .toURI())
                .getPath();
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        int status = javac.run(
                null,
                null,
                null,
                List.of("-classpath", sdkClasses, "-d", dir.toString(), file.toString())
                        .toArray(String[]::new));
        assertThat(status).as("javac exit status").isZero();
        URLClassLoader loader =
                new URLClassLoader(new URL[] {dir.toUri().toURL()}, getClass().getClassLoader());
        return loader.loadClass("gen." + name);
    }
}
