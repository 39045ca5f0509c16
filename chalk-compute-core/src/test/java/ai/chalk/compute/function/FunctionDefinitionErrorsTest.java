package ai.chalk.compute.function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.acme.Broken;
import com.acme.Fns;
import com.acme.Orders;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Every mistake in a function's declaration is reported at registration, naming the method and the exact part. */
class FunctionDefinitionErrorsTest {

    private static final String SUPPORTED = "use a primitive or its box, String, byte[], an enum, a record, List, Map, "
            + "Optional, Instant, LocalDate, LocalDateTime, Duration or BigDecimal";

    static Stream<Arguments> signatureErrors() {
        return Stream.of(
                Arguments.of(
                        Fns.class,
                        "com.acme.Fns.score(String text, Object x): parameter 'x' has type Object, "
                                + "which has no Arrow mapping; " + SUPPORTED),
                Arguments.of(
                        Broken.NestedObject.class,
                        "com.acme.Broken$NestedObject.count(Broken.Tagged tagged): "
                                + "parameter 'tagged' has type Broken.Tagged; tagged.tags[] has type Object, which has no Arrow "
                                + "mapping; " + SUPPORTED),
                Arguments.of(
                        Broken.ReturnsObject.class,
                        "com.acme.Broken$ReturnsObject.load(String key): return type " + "Object has no Arrow mapping; "
                                + SUPPORTED),
                Arguments.of(
                        Broken.ReturnsNested.class,
                        "com.acme.Broken$ReturnsNested.load(String key): return type "
                                + "Map<String, Broken.Tagged>; result{value}.tags[] has type Object, which has no Arrow mapping; "
                                + SUPPORTED),
                Arguments.of(
                        Broken.ReturnsVoid.class,
                        "com.acme.Broken$ReturnsVoid.log(String line): returns void, "
                                + "but a Chalk function returns a value"),
                Arguments.of(
                        Broken.ArrayParam.class,
                        "com.acme.Broken$ArrayParam.sum(int[] values): parameter 'values' "
                                + "has type int[], which has no Arrow mapping; use List<Integer> instead of an array"),
                Arguments.of(
                        Broken.BadDefault.class,
                        "com.acme.Broken$BadDefault.page(int size): parameter 'size' has "
                                + "@Default(\"\\\"ten\\\"\"), but \"ten\" is not a value of type int; write a default"
                                + " of type int as JSON: a whole number, such as @Default(\"10\")"),
                Arguments.of(
                        Broken.SameParamNames.class,
                        "com.acme.Broken$SameParamNames.pair(int x, int x): two " + "parameters are named 'x'"),
                Arguments.of(
                        Broken.ScorerReturnsText.class,
                        "com.acme.Broken$ScorerReturnsText.grade(String output): a "
                                + "@ChalkScorer returns a number, an EvaluationScorerResult or a List<EvaluationScorerResult>, "
                                + "not String"),
                Arguments.of(
                        Broken.ScorerWithoutParameters.class,
                        "com.acme.Broken$ScorerWithoutParameters.always(): a "
                                + "@ChalkScorer takes at least one parameter: the dataset columns it reads by name, or output for "
                                + "what the task returned"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("signatureErrors")
    void signatureErrorsNameTheMethodAndTheParameter(Class<?> type, String message) {
        FunctionRegistry registry = new FunctionRegistry();
        assertThatThrownBy(() -> registry.register(type))
                .isExactlyInstanceOf(FunctionSignatureException.class)
                .hasMessage(message);
        assertThat(registry.definitions()).isEmpty();
    }

    static Stream<Arguments> definitionErrors() {
        return Stream.of(
                Arguments.of(
                        Broken.BadTimeout.class,
                        "com.acme.Broken$BadTimeout.f(int x): timeout '5 minutes' is "
                                + "neither an ISO-8601 duration (PT5M) nor a number of seconds (300, 300s, 5m, 1h)"),
                Arguments.of(
                        Broken.BadEnv.class,
                        "com.acme.Broken$BadEnv.f(int x): env entry #1 (no '=') is not of the form "
                                + "KEY=value with KEY a variable name"),
                Arguments.of(
                        // the value, an API key as often as not, is never in the message (the log, the endpoint)
                        Broken.BadEnvName.class,
                        "com.acme.Broken$BadEnvName.f(int x): env entry #2 (named 'OPENAI-API-KEY') is not of the form "
                                + "KEY=value with KEY a variable name"),
                Arguments.of(
                        Broken.BadReplicas.class,
                        "com.acme.Broken$BadReplicas.f(int x): minReplicas 3 is greater " + "than maxReplicas 1"),
                Arguments.of(
                        Broken.BadMemory.class,
                        "com.acme.Broken$BadMemory.f(int x): memory '4 GB' is not a "
                                + "Kubernetes quantity such as \"4Gi\""),
                Arguments.of(
                        Broken.ImageTwice.class,
                        "com.acme.Broken$ImageTwice.f(int x): set image or imageFactory, " + "not both"),
                Arguments.of(
                        Broken.MissingFactory.class,
                        "com.acme.Broken$MissingFactory.f(int x): imageFactory "
                                + "'gpuImage' names no parameterless method gpuImage() in com.acme.Broken$MissingFactory"),
                Arguments.of(
                        Broken.FactoryNotStatic.class,
                        "com.acme.Broken$FactoryNotStatic.f(int x): imageFactory "
                                + "'image' must name a static method returning Image, but com.acme.Broken$FactoryNotStatic.image() "
                                + "is not static and returns Image"),
                Arguments.of(
                        Broken.BothAnnotations.class,
                        "com.acme.Broken$BothAnnotations.f(String output): annotated "
                                + "with both @ChalkFunction and @ChalkScorer; keep one"),
                Arguments.of(
                        Broken.NotPublic.class,
                        "com.acme.Broken$NotPublic.hidden(int x): a @ChalkFunction or "
                                + "@ChalkScorer method must be public"),
                Arguments.of(
                        Broken.NoAnnotations.class,
                        "com.acme.Broken$NoAnnotations has no public method annotated "
                                + "with @ChalkFunction or @ChalkScorer"),
                Arguments.of(
                        Broken.NoConstructor.class,
                        "com.acme.Broken$NoConstructor has instance functions but no "
                                + "no-argument constructor; add one, or register an instance: registry.register(new "
                                + "NoConstructor(...))"),
                Arguments.of(
                        Broken.BadName.class,
                        "com.acme.Broken$BadName.f(int x): name 'has space' must start with a "
                                + "letter or underscore and contain only letters, digits, '_' and '-'"),
                Arguments.of(
                        Broken.MethodWithDeploymentOptions.class,
                        "com.acme.Broken$MethodWithDeploymentOptions.f(int x): "
                                + "deployment options belong on @ChalkClass com.acme.Broken$MethodWithDeploymentOptions, which "
                                + "serves this method; move memory, maxReplicas there"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("definitionErrors")
    void definitionErrorsNameTheMethodAndTheOption(Class<?> type, String message) {
        FunctionRegistry registry = new FunctionRegistry();
        assertThatThrownBy(() -> registry.register(type))
                .isExactlyInstanceOf(FunctionDefinitionException.class)
                .hasMessage(message);
        assertThat(registry.definitions()).isEmpty();
    }

    @Test
    void twoFunctionsWithOneNameAreReportedWithBothMethodsAndNothingOfTheSecondClassIsRegistered() {
        FunctionRegistry registry = new FunctionRegistry();
        registry.register(Orders.class);
        assertThatThrownBy(() -> registry.register(Broken.AddAgain.class))
                .isExactlyInstanceOf(FunctionDefinitionException.class)
                .hasMessage("function name 'add' is used by both com.acme.Orders.add(int a, int b) and "
                        + "com.acme.Broken$AddAgain.add(long a, long b); rename one with name = \"...\"");
        assertThatThrownBy(() -> registry.register(new Orders()))
                .hasMessage("function name 'add' is used by both com.acme.Orders.add(int a, int b) and "
                        + "com.acme.Orders.add(int a, int b) (the same method, registered twice)");
        assertThat(registry.definitions())
                .extracting(FunctionDefinition::name)
                .containsExactly("add", "fail", "greet", "search_orders");
    }

    @Test
    void registeringEachMethodOnItsOwnKeepsTheValidOnesAndGivesEachInvalidOneItsOwnError() {
        FunctionRegistry registry = new FunctionRegistry();
        assertThatThrownBy(() -> registry.register(Broken.Mixed.class))
                .as("all or nothing: the first mistake, nothing registered")
                .hasMessageStartingWith("com.acme.Broken$Mixed.returnsNothing(String line): returns void");
        assertThat(registry.definitions()).isEmpty();

        FunctionRegistry.Registration each = registry.registerEach(Broken.Mixed.class);
        assertThat(each.registered()).extracting(FunctionDefinition::name).containsExactly("echo", "twice");
        assertThat(registry.get("twice").invoke(21)).isEqualTo(42);
        assertThat(each.rejected())
                .satisfiesExactly(
                        first -> {
                            assertThat(first.method().getName()).isEqualTo("returnsNothing");
                            assertThat(first.error())
                                    .hasMessage("com.acme.Broken$Mixed.returnsNothing(String line): returns void, but"
                                            + " a Chalk function returns a value");
                        },
                        second -> {
                            assertThat(second.method().getName()).isEqualTo("takesObject");
                            assertThat(second.error())
                                    .isInstanceOf(FunctionSignatureException.class)
                                    .hasMessageStartingWith("com.acme.Broken$Mixed.takesObject(Object x): parameter"
                                            + " 'x' has type Object, which has no Arrow mapping");
                        });

        // registered again, every name is taken: each method fails alone, naming both
        FunctionRegistry.Registration again = registry.registerEach(new Broken.Mixed());
        assertThat(again.registered()).isEmpty();
        assertThat(again.rejected())
                .extracting(r -> r.error().getMessage())
                .contains("function name 'echo' is used by both com.acme.Broken$Mixed.echo(String text) and "
                        + "com.acme.Broken$Mixed.echo(String text) (the same method, registered twice)");
    }

    @Test
    void theStatusCodeIsInvalidArgumentAndTheMessageHasNoPrefix() {
        assertThatThrownBy(() -> new FunctionRegistry().register(Fns.class))
                .isInstanceOfSatisfying(FunctionSignatureException.class, e -> {
                    assertThat(e.statusCode()).isEqualTo(io.grpc.Status.Code.INVALID_ARGUMENT);
                    assertThat(e.getMessage()).isEqualTo(e.serverMessage()).startsWith("com.acme.Fns.score(");
                });
    }
}
