package ai.chalk.compute.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.code.Language;
import ai.chalk.compute.function.catalog.FunctionVersion;
import ai.chalk.compute.function.deploy.CatalogField;
import ai.chalk.compute.function.deploy.CatalogFunction;
import ai.chalk.compute.sandbox.SandboxClient;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * The command line's parsing and its errors, without a server: what a mistyped command prints and exits with, how a
 * duration, a snippet's end and a function's arguments are read.
 */
class CommandLineParsingTest {

    /** What one run printed and returned. */
    record Run(int status, String out, String err) {}

    static Run run(Supplier<SandboxClient> clients, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine line = ChalkComputeCli.commandLine(new ChalkComputeCli(clients));
        line.setOut(new PrintWriter(out, true));
        line.setErr(new PrintWriter(err, true));
        int status = line.execute(args);
        return new Run(status, out.toString(), err.toString());
    }

    static Run run(String... args) {
        return run(
                () -> {
                    throw new AssertionError("parsing must fail before a connection is made");
                },
                args);
    }

    @Test
    void helpListsTheCommandsAndHowItConnects() {
        Run help = run("--help");
        assertThat(help.status()).isZero();
        assertThat(help.out())
                .contains("repl", "sandbox", "function", "image")
                .contains("CHALK_COMPUTE_TARGET", "CHALK_CLIENT_ID");
        assertThat(run("sandbox", "--help").out()).contains("create", "list", "exec", "shell", "terminate");
        assertThat(run("function", "--help").out()).contains("list", "call", "versions", "rollback");
    }

    @Test
    void mistypedCommandsExitWithTwoAndSayWhat() {
        Run unknown = run("sandbox", "destroy", "x");
        assertThat(unknown.status()).isEqualTo(2);
        assertThat(unknown.err()).contains("Unmatched arguments from index 1: 'destroy', 'x'");

        Run noCommand = run("sandbox", "exec", "sb-1");
        assertThat(noCommand.status()).isEqualTo(2);
        assertThat(noCommand.err()).contains("Missing required parameter: 'COMMAND'");

        Run noGroupCommand = run("sandbox");
        assertThat(noGroupCommand.status()).isEqualTo(2);
        assertThat(noGroupCommand.err()).contains("name what to do: create, list, exec, shell or terminate");

        Run variant = run("repl", "--variant", "colabx");
        assertThat(variant.status()).isEqualTo(2);
        assertThat(variant.err()).contains("unknown variant 'colabx': choose one of chalk, jupyter, docker, eval");

        Run language = run("repl", "--variant", "chalk", "--language", "ruby");
        assertThat(language.status()).isEqualTo(2);
        assertThat(language.err()).contains("Invalid value for option '--language'", "PYTHON", "JAVA");

        Run lifetime = run("sandbox", "create", "--lifetime", "5 fortnights");
        assertThat(lifetime.status()).isEqualTo(2);
        assertThat(lifetime.err()).contains("'5 fortnights' is not a duration: write 30s, 5m, 2h, 500ms or PT30S");

        Run both = run("image", "build", "--dockerfile", "Dockerfile", "--apt", "git");
        assertThat(both.status()).isEqualTo(2);
        assertThat(both.err()).contains("--dockerfile builds that file");
    }

    @Test
    void withNoServerConfiguredTheSdksMessageIsShownOnOneLine() {
        Run run = run(() -> SandboxClient.fromEnv(Map.of()), "sandbox", "list");
        assertThat(run.status()).isEqualTo(1);
        assertThat(run.err().strip())
                .startsWith("error: ")
                .contains("no Chalk Compute server configured", "CHALK_COMPUTE_TARGET")
                .doesNotContain("\n", "at ai.chalk");
    }

    @Test
    void durationsAsPeopleTypeThem() {
        DurationConverter durations = new DurationConverter();
        assertThat(durations.convert("90")).isEqualTo(Duration.ofSeconds(90));
        assertThat(durations.convert("30s")).isEqualTo(Duration.ofSeconds(30));
        assertThat(durations.convert("5m")).isEqualTo(Duration.ofMinutes(5));
        assertThat(durations.convert("2h")).isEqualTo(Duration.ofHours(2));
        assertThat(durations.convert("250ms")).isEqualTo(Duration.ofMillis(250));
        assertThat(durations.convert("PT1M30S")).isEqualTo(Duration.ofSeconds(90));
        assertThatThrownBy(() -> durations.convert("0s"))
                .isInstanceOf(CommandLine.TypeConversionException.class)
                .hasMessageContaining("not a positive duration");
    }

    @Test
    void aPythonSnippetEndsWhereItsBracketsStringsAndBlocksDo() {
        assertThat(SnippetInput.isComplete(Language.PYTHON, "x = 1 + 1")).isTrue();
        assertThat(SnippetInput.isComplete(Language.PYTHON, "print(x")).isFalse();
        assertThat(SnippetInput.isComplete(Language.PYTHON, "d = {'a': [1,\n 2]}"))
                .isTrue();
        assertThat(SnippetInput.isComplete(Language.PYTHON, "s = '''one\ntwo")).isFalse();
        assertThat(SnippetInput.isComplete(Language.PYTHON, "s = '''one\ntwo'''"))
                .isTrue();
        assertThat(SnippetInput.isComplete(Language.PYTHON, "x = 1 + \\")).isFalse();
        // a block waits for its blank line, as in Python's REPL
        assertThat(SnippetInput.isComplete(Language.PYTHON, "for i in range(3):"))
                .isFalse();
        assertThat(SnippetInput.isComplete(Language.PYTHON, "for i in range(3):\n    print(i)"))
                .isFalse();
        assertThat(SnippetInput.isComplete(Language.PYTHON, "for i in range(3):\n    print(i)\n"))
                .isTrue();
        // colons in strings, comments, slices and lambdas open nothing
        assertThat(SnippetInput.isComplete(Language.PYTHON, "print('a:')  # note:"))
                .isTrue();
        assertThat(SnippetInput.isComplete(Language.PYTHON, "f = lambda v: v[1:]"))
                .isTrue();
        assertThat(SnippetInput.isComplete(Language.PYTHON, "print(\"it's (\")"))
                .isTrue();

        assertThat(SnippetInput.isComplete(Language.JAVA, "int f(int x) {")).isFalse();
        assertThat(SnippetInput.isComplete(Language.JAVA, "int f(int x) {\n  return x; // }\n}"))
                .isTrue();
        assertThat(SnippetInput.isComplete(Language.JAVA, "String s = \"{\";")).isTrue();
        assertThat(SnippetInput.isComplete(Language.JAVA, "var t = \"\"\"\n  a"))
                .isFalse();
    }

    @Test
    void functionArgumentsAreJsonConvertedToTheCatalogsTypes() {
        CatalogFunction repeat = new CatalogFunction(
                "repeat",
                new FunctionVersion("v-1", "f-1", "repeat", 1, "rev-1", Instant.EPOCH, true),
                Optional.empty(),
                List.of(
                        field("text", String.class, Optional.empty()),
                        field("copies", Long.class, Optional.of("2")),
                        field("weights", List.class, Optional.of("[]"))),
                field("output", String.class, Optional.empty()),
                false);

        assertThat(FunctionCommands.arguments(repeat, List.of("Ada"))).containsExactly("Ada");
        assertThat(FunctionCommands.arguments(repeat, List.of("\"Ada\"", "3", "[0.5, 1]")))
                .containsExactly("Ada", 3L, List.of(0.5, 1));
        // a String parameter takes the text as typed, JSON or not
        assertThat(FunctionCommands.arguments(repeat, List.of("42"))).containsExactly("42");

        assertThatThrownBy(() -> FunctionCommands.arguments(repeat, List.of()))
                .hasMessage("repeat needs at least 1 argument(s), got 0: (String text, Long copies=2, List weights=[])"
                        + " -> String");
        assertThatThrownBy(() -> FunctionCommands.arguments(repeat, List.of("a", "1", "[]", "extra")))
                .hasMessageStartingWith("repeat takes 3 argument(s), got 4");
        assertThatThrownBy(() -> FunctionCommands.arguments(repeat, List.of("a", "many")))
                .hasMessage("argument copies: many is not a Long");
    }

    private static CatalogField field(String name, Class<?> type, Optional<String> defaultJson) {
        return new CatalogField(name, Optional.of(type), type.getSimpleName(), true, defaultJson, Map.of());
    }
}
