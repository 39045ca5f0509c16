package ai.chalk.compute.function.arrow;

import static ai.chalk.compute.function.arrow.Fixtures.type;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.evaluation.EvaluationScorerResult;
import ai.chalk.compute.sandbox.Sandbox;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ArrowTypeMappingTest {

    private final ArrowTypeMapping mapping = ArrowTypeMapping.standard();

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            primitiveBoolean | Bool                           | false
            boxedBoolean     | Bool                           | true
            primitiveByte    | Int(8, true)                   | false
            boxedByte        | Int(8, true)                   | true
            primitiveShort   | Int(16, true)                  | false
            boxedShort       | Int(16, true)                  | true
            primitiveInt     | Int(32, true)                  | false
            boxedInt         | Int(32, true)                  | true
            primitiveLong    | Int(64, true)                  | false
            boxedLong        | Int(64, true)                  | true
            primitiveFloat   | FloatingPoint(SINGLE)          | false
            boxedFloat       | FloatingPoint(SINGLE)          | true
            primitiveDouble  | FloatingPoint(DOUBLE)          | false
            boxedDouble      | FloatingPoint(DOUBLE)          | true
            string           | Utf8                           | true
            bytes            | Binary                         | true
            instant          | Timestamp(MICROSECOND, UTC)    | true
            localDateTime    | Timestamp(MICROSECOND, null)   | true
            localDate        | Date(DAY)                      | true
            duration         | Duration(MICROSECOND)          | true
            decimal          | Decimal(38, 18, 128)           | true
            maybeString      | Utf8                           | true
            optionalInt      | Int(32, true)                  | true
            optionalLong     | Int(64, true)                  | true
            optionalDouble   | FloatingPoint(DOUBLE)          | true
            """)
    void scalarsMapToTheirArrowTypes(String component, String arrowType, boolean nullable) {
        Field field = mapping.field("v", type(component));
        assertThat(field.getType()).hasToString(arrowType);
        assertThat(field.isNullable()).isEqualTo(nullable);
        assertThat(field.getChildren()).isEmpty();
        assertThat(field.getMetadata()).isEmpty();
    }

    @Test
    void enumsAreUtf8WithTheirClassAndConstants() {
        Field field = mapping.field("color", type("color"));
        assertThat(field.getType()).isEqualTo(ArrowType.Utf8.INSTANCE);
        assertThat(field.getMetadata())
                .containsExactlyInAnyOrderEntriesOf(Map.of(
                        "chalk.java.type", "ai.chalk.compute.function.arrow.Fixtures$Color",
                        "chalk.java.enum_constants", "[\"RED\",\"GREEN\",\"BLUE\"]"));
    }

    @Test
    void recordsAreStructsWithOneChildPerComponentInOrder() {
        Field person = mapping.field("p", type("person"));
        assertThat(person.getType()).isEqualTo(ArrowType.Struct.INSTANCE);
        assertThat(person.isNullable()).isTrue();
        assertThat(person.getMetadata())
                .containsExactly(Map.entry("chalk.java.type", "ai.chalk.compute.function.arrow.Fixtures$Person"));
        assertThat(person.getChildren())
                .extracting(Field::getName)
                .containsExactly("name", "age", "tags", "address", "scores");
        Field age = person.getChildren().get(1);
        assertThat(age.getType()).isEqualTo(new ArrowType.Int(32, true));
        assertThat(age.isNullable()).isFalse();
        Field address = person.getChildren().get(3);
        assertThat(address.getType()).isEqualTo(ArrowType.Struct.INSTANCE);
        assertThat(address.isNullable()).isTrue();
        assertThat(address.getChildren())
                .extracting(Field::getName, Field::getType)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("city", ArrowType.Utf8.INSTANCE),
                        org.assertj.core.groups.Tuple.tuple("since", new ArrowType.Date(DateUnit.DAY)));
    }

    @Test
    void listsHaveAnItemFieldAndMapsAnEntriesStructWithANonNullKey() {
        Field list = mapping.field("xs", type("nestedLists"));
        assertThat(list.getType()).isEqualTo(ArrowType.List.INSTANCE);
        Field inner = list.getChildren().get(0);
        assertThat(inner.getName()).isEqualTo("item");
        assertThat(inner.getType()).isEqualTo(ArrowType.List.INSTANCE);
        assertThat(inner.getChildren().get(0).getType()).isEqualTo(new ArrowType.Int(32, true));

        Field map = mapping.field("m", type("counts"));
        assertThat(map.getType()).isEqualTo(new ArrowType.Map(false));
        Field entries = map.getChildren().get(0);
        assertThat(entries.getName()).isEqualTo("entries");
        assertThat(entries.isNullable()).isFalse();
        assertThat(entries.getChildren())
                .extracting(Field::getName, Field::isNullable)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("key", false),
                        org.assertj.core.groups.Tuple.tuple("value", true));
    }

    @Test
    void aSandboxIsTheSdksNonNullableStructOfItsIdMarkedWithItsPythonAndJavaTypes() {
        Field field = mapping.field("output", Sandbox.class);
        assertThat(field.getType()).isEqualTo(ArrowType.Struct.INSTANCE);
        assertThat(field.isNullable()).isFalse();
        assertThat(field.getMetadata())
                .containsExactlyInAnyOrderEntriesOf(Map.of(
                        "chalk.python.type", "chalkcompute.Sandbox",
                        "chalk.java.type", "ai.chalk.compute.sandbox.Sandbox"));
        assertThat(field.getChildren()).singleElement().satisfies(id -> {
            assertThat(id.getName()).isEqualTo("sandbox_id");
            assertThat(id.getType()).isEqualTo(ArrowType.LargeUtf8.INSTANCE);
            assertThat(id.isNullable()).isFalse();
        });
    }

    record SandboxHolder(Optional<Sandbox> maybe, List<Sandbox> many) {}

    @Test
    void anOptionalSandboxIsNullableAndListElementsCarryTheMetadata() throws Exception {
        Field maybe = mapping.field("m", SandboxHolder.class.getRecordComponents()[0].getGenericType());
        assertThat(maybe.isNullable()).isTrue();
        assertThat(maybe.getMetadata()).containsEntry("chalk.python.type", "chalkcompute.Sandbox");
        assertThat(maybe.getChildren().get(0).getType()).isEqualTo(ArrowType.LargeUtf8.INSTANCE);

        Field many = mapping.field("l", SandboxHolder.class.getRecordComponents()[1].getGenericType());
        Field item = many.getChildren().get(0);
        assertThat(item.isNullable()).isFalse();
        assertThat(item.getMetadata()).containsEntry("chalk.python.type", "chalkcompute.Sandbox");
    }

    @Test
    void aScorerResultIsAStructOfScoreAndJsonMetadata() {
        Field field = mapping.field("output", EvaluationScorerResult.class);
        assertThat(field.isNullable()).isFalse();
        assertThat(field.getMetadata()).containsEntry("chalk.python.type", "chalkcompute.EvaluationScorerResult");
        assertThat(field.getChildren())
                .extracting(Field::getName, Field::getType, Field::isNullable)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple(
                                "score", new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE), false),
                        org.assertj.core.groups.Tuple.tuple("metadata", ArrowType.Utf8.INSTANCE, true));
    }

    @Test
    void extraMetadataIsKeptOnTheField() {
        Field field = mapping.field("limit", int.class, Map.of("chalk.default", "10"));
        assertThat(field.getMetadata()).containsExactly(Map.entry("chalk.default", "10"));
        assertThat(field.getType()).isEqualTo(new ArrowType.Int(32, true));
        assertThat(new ArrowType.Timestamp(TimeUnit.MICROSECOND, "UTC"))
                .isEqualTo(mapping.field("t", type("instant")).getType());
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            object         | type Object has no Arrow mapping; use a primitive or its box, String, byte[], an enum, a record, List, Map, Optional, Instant, LocalDate, LocalDateTime, Duration or BigDecimal
            objects        | type Object at [] has no Arrow mapping; use a primitive or its box, String, byte[], an enum, a record, List, Map, Optional, Instant, LocalDate, LocalDateTime, Duration or BigDecimal
            character      | type char has no Arrow mapping; use String
            ints           | type int[] has no Arrow mapping; use List<Integer> instead of an array
            set            | type Set<String> has no Arrow mapping; use List<...>
            wildcard       | type ? at [] has no Arrow mapping; declare the exact type instead of a wildcard
            listKeys       | type List<String> at {key} has no Arrow mapping; use a String, a number, a time or an enum as a map key
            doubleOptional | type Optional<String> at ? has no Arrow mapping; use a single Optional
            date           | type Date has no Arrow mapping; use a primitive or its box, String, byte[], an enum, a record, List, Map, Optional, Instant, LocalDate, LocalDateTime, Duration or BigDecimal
            """)
    void typesWithoutAMappingAreExplained(String component, String message) {
        assertThatThrownBy(() -> mapping.field("v", type(component)))
                .isInstanceOf(UnsupportedJavaTypeException.class)
                .hasMessage(message);
    }

    static final class Pojo {}

    record Node(String name, List<Node> children) {}

    record Box<T>(T value) {}

    @Test
    void classesThatAreNotRecordsRecursiveRecordsAndGenericRecordsAreExplained() {
        assertThatThrownBy(() -> mapping.field("v", Pojo.class))
                .hasMessage(
                        "type ArrowTypeMappingTest.Pojo has no Arrow mapping; make it a record, or describe it with a CustomArrowType");
        assertThatThrownBy(() -> mapping.field("v", Node.class))
                .isInstanceOfSatisfying(UnsupportedJavaTypeException.class, e -> {
                    assertThat(e.path()).isEqualTo(".children[]");
                    assertThat(e.hint())
                            .isEqualTo("an Arrow schema cannot contain itself; break the cycle between the records");
                });
        assertThatThrownBy(() -> mapping.field("v", Box.class))
                .hasMessage("type ArrowTypeMappingTest.Box has no Arrow mapping; use a record without type parameters");
    }

    @Test
    void canonicalJsonChecksADefaultAgainstTheTypeAndSaysHowToWriteOne() {
        assertThat(mapping.canonicalJson(" { \"name\" : \"Ada\", \"age\": 36, \"tags\": [\"x\"] } ", type("person")))
                .isEqualTo("{\"name\":\"Ada\",\"age\":36,\"tags\":[\"x\"]}");
        assertThat(mapping.canonicalJson("\"2024-05-01T00:00:00Z\"", type("instant")))
                .isEqualTo("\"2024-05-01T00:00:00Z\"");
        assertThatThrownBy(() -> mapping.canonicalJson("\"RED\"", type("primitiveInt")))
                .hasMessage("\"RED\" is not a value of type int; write a default of type int as JSON: a whole number,"
                        + " such as @Default(\"10\")");
        assertThatThrownBy(() -> mapping.canonicalJson("300", type("primitiveByte")))
                .hasMessage("300 is not a whole number that fits in byte; write a default of type byte as JSON: a whole"
                        + " number, such as @Default(\"10\")");
        assertThatThrownBy(() -> mapping.canonicalJson("\"PURPLE\"", type("color")))
                .hasMessage("\"PURPLE\" is not one of [RED, GREEN, BLUE]; write a default of type Fixtures.Color as the"
                        + " text itself: a constant's name (or null), such as @Default(\"RED\")");
        assertThatThrownBy(() -> mapping.canonicalJson("{\"name\": \"Ada\"}", type("person")))
                .hasMessageStartingWith(
                        ".age: null is not a value of type int; write a default of type Fixtures.Person as"
                                + " JSON: an object with its components (or null), such as"
                                + " @Default(\"{\\\"name\\\":\\\"-\\\",\\\"age\\\":10,\\\"tags\\\":[\\\"-\\\"],");
        assertThatThrownBy(() -> mapping.canonicalJson("{\"nickname\": \"A\", \"age\": 1}", type("person")))
                .hasMessageStartingWith("Fixtures.Person has no component 'nickname'; write a default");
        assertThatThrownBy(() -> mapping.canonicalJson("\"yesterday\"", type("localDate")))
                .hasMessage(
                        "\"yesterday\" is not a value of type LocalDate (write times in ISO-8601); write a default"
                                + " of type LocalDate as the text itself: ISO-8601 (or null), such as @Default(\"2024-05-01\")");
        assertThatThrownBy(() -> mapping.canonicalJson("null", Sandbox.class))
                .hasMessage("null is not a value of type Sandbox; a parameter of type Sandbox cannot have a default;"
                        + " leave @Default out");
    }

    @Test
    void aTextValuedDefaultIsTheTextAsWrittenAndTheJsonStringFormIsStillUnderstood() {
        assertThat(mapping.canonicalJson("-", type("string"))).isEqualTo("\"-\"");
        assertThat(mapping.canonicalJson("\"-\"", type("string"))).isEqualTo("\"-\"");
        assertThat(mapping.canonicalJson("{not json", type("string"))).isEqualTo("\"{not json\"");
        assertThat(mapping.canonicalJson("10", type("string"))).isEqualTo("\"10\"");
        assertThat(mapping.canonicalJson("", type("string"))).isEqualTo("\"\"");
        assertThat(mapping.canonicalJson("null", type("maybeString"))).isEqualTo("null");
        assertThat(mapping.canonicalJson("none", type("maybeString"))).isEqualTo("\"none\"");
        assertThat(mapping.canonicalJson("GREEN", type("color"))).isEqualTo("\"GREEN\"");
        assertThat(mapping.canonicalJson("2024-05-01", type("localDate"))).isEqualTo("\"2024-05-01\"");
        assertThat(mapping.canonicalJson("PT30S", type("duration"))).isEqualTo("\"PT30S\"");
        // inside JSON, strings are JSON strings
        assertThat(mapping.canonicalJson("[\"a\", \"b\"]", type("strings"))).isEqualTo("[\"a\",\"b\"]");
    }

    @Test
    void aDefaultThatIsNotJsonSaysWhatToWriteWithoutTheParsersWords() {
        assertThatThrownBy(() -> mapping.canonicalJson("-", type("primitiveInt")))
                .hasMessage("'-' is not JSON; write a default of type int as JSON: a whole number, such as"
                        + " @Default(\"10\")");
        assertThatThrownBy(() -> mapping.canonicalJson("a, b", type("strings")))
                .hasMessage("'a, b' is not JSON; write a default of type List<String> as JSON: an array (or null), such"
                        + " as @Default(\"[\\\"-\\\"]\")");
        assertThatThrownBy(() -> mapping.canonicalJson("", type("primitiveDouble")))
                .hasMessage("it is empty; write a default of type double as JSON: a number, such as @Default(\"0.5\")");
    }

    @Test
    void customTypesCannotBeRegisteredTwice() {
        assertThatThrownBy(() -> mapping.with(new SandboxArrowType()))
                .hasMessage("the mapping already has a custom type for ai.chalk.compute.sandbox.Sandbox");
    }
}
