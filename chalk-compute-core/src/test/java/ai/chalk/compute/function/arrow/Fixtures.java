package ai.chalk.compute.function.arrow;

import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.OptionalLong;

/** Types used across the Arrow tests; {@link #type(String)} gives a component's generic type. */
final class Fixtures {

    enum Color {
        RED,
        GREEN,
        BLUE
    }

    record Address(String city, LocalDate since) {}

    record Person(String name, int age, List<String> tags, Optional<Address> address, Map<String, Double> scores) {}

    /** Declares one component per type under test, so their generic types can be looked up by name. */
    record Types(
            boolean primitiveBoolean,
            Boolean boxedBoolean,
            byte primitiveByte,
            Byte boxedByte,
            short primitiveShort,
            Short boxedShort,
            int primitiveInt,
            Integer boxedInt,
            long primitiveLong,
            Long boxedLong,
            float primitiveFloat,
            Float boxedFloat,
            double primitiveDouble,
            Double boxedDouble,
            String string,
            byte[] bytes,
            Color color,
            Instant instant,
            LocalDateTime localDateTime,
            LocalDate localDate,
            Duration duration,
            BigDecimal decimal,
            List<String> strings,
            List<List<Integer>> nestedLists,
            Map<String, Integer> counts,
            Map<Color, List<String>> byColor,
            Map<Long, Person> people,
            Optional<String> maybeString,
            Optional<Person> maybePerson,
            OptionalInt optionalInt,
            OptionalLong optionalLong,
            OptionalDouble optionalDouble,
            Person person,
            List<Person> persons,
            Object object,
            List<Object> objects,
            char character,
            int[] ints,
            java.util.Set<String> set,
            List<?> wildcard,
            Map<List<String>, String> listKeys,
            Optional<Optional<String>> doubleOptional,
            java.util.Date date) {}

    private Fixtures() {}

    static Type type(String component) {
        return Arrays.stream(Types.class.getRecordComponents())
                .filter(c -> c.getName().equals(component))
                .map(RecordComponent::getGenericType)
                .findFirst()
                .orElseThrow();
    }
}
