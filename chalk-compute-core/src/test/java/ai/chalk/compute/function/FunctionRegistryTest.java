package ai.chalk.compute.function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.function.arrow.ArrowTypeMapping;
import ai.chalk.compute.function.arrow.ChalkMetadata;
import ai.chalk.compute.function.arrow.DecodeContext;
import ai.chalk.compute.function.arrow.RowCodec;
import ai.chalk.compute.image.Image;
import com.acme.Embedder;
import com.acme.Images;
import com.acme.Orders;
import com.acme.Orders.Order;
import com.acme.Orders.Tier;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.stream.IntStream;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;

class FunctionRegistryTest {

    private final FunctionRegistry registry = new FunctionRegistry();

    @Test
    void namesDefaultToTheMethodNameAndDefinitionsCarryBothSchemas() {
        List<FunctionDefinition> registered = registry.register(Orders.class);

        assertThat(registered)
                .extracting(FunctionDefinition::name)
                .containsExactly("add", "fail", "greet", "search_orders");
        FunctionDefinition add = registry.get("add").definition();
        assertThat(add.kind()).isEqualTo(FunctionKind.FUNCTION);
        assertThat(add.declaringClass()).isEqualTo(Orders.class);
        assertThat(add.deploymentName()).isEqualTo("add");
        assertThat(add.className()).isEmpty();
        assertThat(add.returnType()).isEqualTo(int.class);
        assertThat(add.inputSchema().getFields())
                .extracting(Field::getName, Field::getType, Field::isNullable)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("a", new ArrowType.Int(32, true), false),
                        org.assertj.core.groups.Tuple.tuple("b", new ArrowType.Int(32, true), false));
        assertThat(add.outputSchema().getFields())
                .singleElement()
                .extracting(Field::getName, Field::getType)
                .containsExactly("output", new ArrowType.Int(32, true));
        assertThat(add.outputSchema().getCustomMetadata())
                .containsExactlyInAnyOrderEntriesOf(Map.of(
                        ChalkMetadata.FUNCTION_DESCRIPTION,
                        "Adds two numbers",
                        ChalkMetadata.FUNCTION_IS_GENERATOR,
                        "false"));
        assertThat(add.signature()).isEqualTo("com.acme.Orders.add(int a, int b)");

        FunctionDefinition greet = registry.get("greet").definition();
        assertThat(greet.parameters()).extracting(FunctionParameter::name).containsExactly("who");
        assertThat(greet.outputSchema().getCustomMetadata())
                .containsExactly(Map.entry(ChalkMetadata.FUNCTION_IS_GENERATOR, "false"));
    }

    @Test
    void optionsAndDefaultsAreReadFromTheAnnotations() {
        registry.register(Orders.class);
        FunctionDefinition search = registry.get("search_orders").definition();

        assertThat(search.deployment())
                .isEqualTo(new DeploymentOptions(
                        Optional.of(Image.base("eclipse-temurin:17-jre")),
                        Optional.of("2"),
                        Optional.of("4Gi"),
                        Map.of("MODE", "fast", "EMPTY", ""),
                        List.of("OPENAI_API_KEY"),
                        OptionalInt.of(0),
                        OptionalInt.of(3)));
        assertThat(search.deployment().env().keySet()).containsExactly("MODE", "EMPTY");
        assertThat(search.callOptions())
                .isEqualTo(new CallOptions(Optional.of(Duration.ofMinutes(5)), OptionalInt.of(2), OptionalInt.of(8)));
        assertThat(search.parameters())
                .extracting(FunctionParameter::name, FunctionParameter::defaultJson, FunctionParameter::role)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("query", Optional.empty(), ParameterRole.COLUMN),
                        org.assertj.core.groups.Tuple.tuple("limit", Optional.of("2"), ParameterRole.COLUMN),
                        org.assertj.core.groups.Tuple.tuple("tier", Optional.of("\"PRO\""), ParameterRole.COLUMN),
                        org.assertj.core.groups.Tuple.tuple("region", Optional.empty(), ParameterRole.COLUMN));
        assertThat(search.parameter("limit").orElseThrow().isRequired()).isFalse();
        assertThat(search.inputSchema().findField("limit").getMetadata())
                .containsExactly(Map.entry("chalk.default", "2"));
        assertThat(search.inputSchema().findField("region").isNullable()).isTrue();
        Field output = search.outputSchema().findField("output");
        assertThat(output.getType()).isEqualTo(ArrowType.List.INSTANCE);
        assertThat(output.getChildren().get(0).getMetadata()).containsEntry("chalk.java.type", "com.acme.Orders$Order");

        assertThat(registry.get("greet").definition().deployment().image())
                .contains(Image.debianSlim().pipInstall("requests"));
        assertThat(registry.get("fail").definition().deployment().image()).contains(Images.gpu());
        assertThat(registry.get("add").definition().deployment()).isEqualTo(DeploymentOptions.DEFAULTS);
        assertThat(registry.get("add").definition().callOptions()).isEqualTo(CallOptions.DEFAULTS);
    }

    @Test
    void functionsRunDirectlyOnALazilyMadeInstanceOrOnTheOneRegistered() {
        registry.register(Orders.class);
        assertThat(registry.get("add").invoke(2, 3)).isEqualTo(5);
        assertThat(registry.get("greet").invoke("Ada")).isEqualTo("Hello, Ada");

        FunctionRegistry withInstance = new FunctionRegistry();
        withInstance.register(new Orders("Hi "));
        assertThat(withInstance.get("greet").invoke("Ada")).isEqualTo("Hi Ada");
        assertThatThrownBy(() -> withInstance.get("greet").invoke())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("greet takes 1 arguments but 0 were given");
    }

    @Test
    void aWorkerCallDecodesArgumentsRunsEachRowAndEncodesResults() {
        registry.register(Orders.class);
        RegisteredFunction add = registry.get("add");
        List<Object[]> calls =
                IntStream.range(0, 1000).mapToObj(i -> new Object[] {i, i * 2}).toList();

        byte[] results = add.call(add.payloads().encodeBatch(calls));

        List<Object> sums = add.payloads().decodeResults(results, DecodeContext.empty());
        assertThat(sums).hasSize(1000);
        for (int i = 0; i < 1000; i++) {
            assertThat(sums.get(i)).isEqualTo(i * 3);
        }
        assertThat(add.payloads().decodeResult(add.call(add.payloads().encodeCall(40, 2)), DecodeContext.empty()))
                .isEqualTo(42);
    }

    @Test
    void aCallMayLeaveOutParametersWithDefaults() {
        registry.register(Orders.class);
        RegisteredFunction search = registry.get("search_orders");
        ArrowTypeMapping mapping = registry.mapping();
        java.lang.reflect.Type region =
                search.definition().parameter("region").orElseThrow().type();
        RowCodec caller = RowCodec.of(
                new Schema(List.of(mapping.field("query", String.class), mapping.field("region", region))),
                List.of(String.class, region),
                mapping);

        byte[] results = search.call(caller.encode(List.<Object[]>of(new Object[] {"lamp", Optional.of("EU")})));

        assertThat(search.payloads().decodeResult(results, DecodeContext.empty()))
                .isEqualTo(List.of(
                        new Order("lamp-0", 0, List.of("PRO", "EU")), new Order("lamp-1", 1, List.of("PRO", "EU"))));
        assertThat(search.invoke("desk", 1, Tier.FREE, Optional.empty()))
                .isEqualTo(List.of(new Order("desk-0", 0, List.of("FREE", "anywhere"))));
    }

    @Test
    void whatTheFunctionThrowsIsItsCauseWithTheRow() {
        registry.register(Orders.class);
        RegisteredFunction fail = registry.get("fail");
        assertThatThrownBy(() -> fail.call(fail.payloads().encodeBatch(List.<Object[]>of(new Object[] {"boom"}))))
                .isInstanceOf(FunctionInvocationException.class)
                .hasMessage("function 'fail' threw java.lang.IllegalStateException: boom on row 0")
                .hasCauseInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> fail.payloads().encodeCall("a", "b"))
                .hasMessage("row 0: fail takes 1 argument [why] but 2 were given");
    }

    @Test
    void aChalkClassServesItsMethodsFromOneInstanceWithTheClassesOptions() {
        int before = Embedder.INSTANCES.get();
        registry.register(Embedder.class);
        assertThat(Embedder.INSTANCES.get())
                .as("made on first call, not at registration")
                .isEqualTo(before);

        assertThat(registry.definitions())
                .extracting(FunctionDefinition::name, FunctionDefinition::kind)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("Embedder.calls", FunctionKind.FUNCTION),
                        org.assertj.core.groups.Tuple.tuple("Embedder.embed", FunctionKind.FUNCTION),
                        org.assertj.core.groups.Tuple.tuple("Embedder.similarity", FunctionKind.SCORER));
        FunctionDefinition embed = registry.get("Embedder.embed").definition();
        assertThat(embed.className()).contains("Embedder");
        assertThat(embed.deploymentName()).isEqualTo("Embedder");
        assertThat(embed.description()).isEqualTo("Embeds text");
        assertThat(embed.deployment())
                .isEqualTo(new DeploymentOptions(
                        Optional.empty(),
                        Optional.empty(),
                        Optional.of("8Gi"),
                        Map.of(),
                        List.of(),
                        OptionalInt.of(1),
                        OptionalInt.empty()));
        assertThat(embed.callOptions())
                .isEqualTo(
                        new CallOptions(Optional.of(Duration.ofSeconds(30)), OptionalInt.of(1), OptionalInt.empty()));
        assertThat(registry.get("Embedder.calls").definition().callOptions().timeout())
                .contains(Duration.ofSeconds(60));

        RegisteredFunction embedFn = registry.get("Embedder.embed");
        assertThat(embedFn.payloads()
                        .decodeResult(
                                embedFn.call(embedFn.payloads().encodeCall("Hello World")), DecodeContext.empty()))
                .isEqualTo(List.of(11.0f, 2.0f));
        embedFn.invoke("again");
        assertThat(registry.get("Embedder.calls").invoke()).isEqualTo(2);
        assertThat(Embedder.INSTANCES.get()).isEqualTo(before + 1);
    }

    @Test
    void unknownNamesListTheRegisteredOnes() {
        registry.register(Embedder.class);
        assertThat(registry.find("embed")).isEmpty();
        assertThatThrownBy(() -> registry.get("embed"))
                .isInstanceOf(NoSuchElementException.class)
                .hasMessage("no function is registered as 'embed'; registered: [Embedder.calls, Embedder.embed, "
                        + "Embedder.similarity]");
    }
}
