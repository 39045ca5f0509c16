package ai.chalk.compute.function.remote;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Map;

/**
 * Turns a result in its generic Java form into the type a caller asked for: the same object when it already is one,
 * a boxed primitive for a primitive, and a number of another width when it fits (the catalog says {@code int64} for
 * a Java {@code int} declared as {@code long}, and a caller may ask for {@code Integer}).
 */
final class Results {

    private static final Map<Class<?>, Class<?>> BOXES = Map.of(
            boolean.class, Boolean.class,
            byte.class, Byte.class,
            short.class, Short.class,
            int.class, Integer.class,
            long.class, Long.class,
            float.class, Float.class,
            double.class, Double.class,
            char.class, Character.class);

    private Results() {}

    /** The boxed form of a primitive class; any other class as it is. */
    static Class<?> boxed(Class<?> type) {
        return BOXES.getOrDefault(type, type);
    }

    /**
     * The value as {@code type}.
     *
     * @throws ClassCastException when it is not one and cannot become one, naming the function
     */
    @SuppressWarnings("unchecked")
    static <R> R as(Object value, Class<R> type, String functionName) {
        Class<?> target = boxed(type);
        if (value == null) {
            if (type.isPrimitive()) {
                throw new ClassCastException(functionName + " returned null, which cannot be a " + type.getName());
            }
            return null;
        }
        if (target.isInstance(value)) {
            return (R) value;
        }
        if (value instanceof Number number) {
            Object converted = number(number, target);
            if (converted != null) {
                return (R) converted;
            }
        }
        throw new ClassCastException(functionName + " returned "
                + value.getClass().getName() + " " + value + ", which is not a " + type.getName());
    }

    private static Object number(Number number, Class<?> target) {
        boolean integral = number instanceof Long
                || number instanceof Integer
                || number instanceof Short
                || number instanceof Byte
                || number instanceof BigInteger;
        try {
            if (target == Double.class) {
                return number.doubleValue();
            }
            if (target == Float.class) {
                return number.floatValue();
            }
            if (target == BigDecimal.class) {
                return new BigDecimal(number.toString());
            }
            if (!integral) {
                return null; // a fraction does not silently become a whole number
            }
            BigInteger whole = new BigInteger(number.toString());
            if (target == Long.class) {
                return whole.longValueExact();
            }
            if (target == Integer.class) {
                return whole.intValueExact();
            }
            if (target == Short.class) {
                return whole.shortValueExact();
            }
            if (target == Byte.class) {
                return whole.byteValueExact();
            }
            if (target == BigInteger.class) {
                return whole;
            }
        } catch (ArithmeticException e) {
            return null; // out of range: reported as not being one
        }
        return null;
    }
}
