package ai.chalk.compute.function.arrow;

import java.lang.reflect.Constructor;
import java.lang.reflect.GenericArrayType;
import java.lang.reflect.Method;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.lang.reflect.WildcardType;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;

/** Resolves declared Java types into {@link ValueType}s, or explains why one has no Arrow mapping. */
final class TypeResolver {

    static final String SUPPORTED =
            "use a primitive or its box, String, byte[], an enum, a record, List, Map, Optional, "
                    + "Instant, LocalDate, LocalDateTime, Duration or BigDecimal";

    private static final Map<Class<?>, ScalarKind> PRIMITIVES = Map.of(
            boolean.class,
            ScalarKind.BOOLEAN,
            byte.class,
            ScalarKind.BYTE,
            short.class,
            ScalarKind.SHORT,
            int.class,
            ScalarKind.INT,
            long.class,
            ScalarKind.LONG,
            float.class,
            ScalarKind.FLOAT,
            double.class,
            ScalarKind.DOUBLE);

    private static final Map<Class<?>, ScalarKind> OBJECTS = Map.ofEntries(
            Map.entry(Boolean.class, ScalarKind.BOOLEAN), Map.entry(Byte.class, ScalarKind.BYTE),
            Map.entry(Short.class, ScalarKind.SHORT), Map.entry(Integer.class, ScalarKind.INT),
            Map.entry(Long.class, ScalarKind.LONG), Map.entry(Float.class, ScalarKind.FLOAT),
            Map.entry(Double.class, ScalarKind.DOUBLE), Map.entry(String.class, ScalarKind.STRING),
            Map.entry(byte[].class, ScalarKind.BYTES), Map.entry(Instant.class, ScalarKind.INSTANT),
            Map.entry(LocalDateTime.class, ScalarKind.LOCAL_DATE_TIME),
                    Map.entry(LocalDate.class, ScalarKind.LOCAL_DATE),
            Map.entry(Duration.class, ScalarKind.DURATION), Map.entry(BigDecimal.class, ScalarKind.DECIMAL));

    private final Map<Class<?>, CustomArrowType<?, ?>> customTypes;
    private final Map<Type, ValueType> resolved = new ConcurrentHashMap<>();

    TypeResolver(Map<Class<?>, CustomArrowType<?, ?>> customTypes) {
        this.customTypes = Map.copyOf(customTypes);
    }

    /**
     * The resolved form of a declared type.
     *
     * @throws UnsupportedJavaTypeException when it, or a type inside it, has no mapping
     */
    ValueType resolve(Type type) {
        ValueType known = resolved.get(type);
        if (known != null) {
            return known;
        }
        ValueType fresh = resolve(type, "", new ArrayDeque<>());
        resolved.put(type, fresh);
        return fresh;
    }

    private ValueType resolve(Type type, String path, Deque<Class<?>> enclosingRecords) {
        if (type instanceof Class<?> c) {
            return resolveClass(c, path, enclosingRecords);
        }
        if (type instanceof ParameterizedType p) {
            return resolveParameterized(p, path, enclosingRecords);
        }
        if (type instanceof GenericArrayType) {
            throw new UnsupportedJavaTypeException(path, type, "use List<...> instead of an array");
        }
        if (type instanceof WildcardType) {
            throw new UnsupportedJavaTypeException(path, type, "declare the exact type instead of a wildcard");
        }
        if (type instanceof TypeVariable<?>) {
            throw new UnsupportedJavaTypeException(path, type, "declare a concrete type instead of a type variable");
        }
        throw new UnsupportedJavaTypeException(path, type, SUPPORTED);
    }

    private ValueType resolveClass(Class<?> c, String path, Deque<Class<?>> enclosingRecords) {
        CustomArrowType<?, ?> custom = customTypes.get(c);
        if (custom != null) {
            return new ValueType.CustomType(custom, resolve(custom.storageType(), path, enclosingRecords));
        }
        ScalarKind primitive = PRIMITIVES.get(c);
        if (primitive != null) {
            return new ValueType.Scalar(c, primitive, true);
        }
        ScalarKind scalar = OBJECTS.get(c);
        if (scalar != null) {
            return new ValueType.Scalar(c, scalar, false);
        }
        if (c == OptionalInt.class) {
            return new ValueType.OptionalType(c, new ValueType.Scalar(int.class, ScalarKind.INT, true));
        }
        if (c == OptionalLong.class) {
            return new ValueType.OptionalType(c, new ValueType.Scalar(long.class, ScalarKind.LONG, true));
        }
        if (c == OptionalDouble.class) {
            return new ValueType.OptionalType(c, new ValueType.Scalar(double.class, ScalarKind.DOUBLE, true));
        }
        if (c.isEnum()) {
            return new ValueType.EnumType(c);
        }
        if (c.isRecord()) {
            return resolveRecord(c, path, enclosingRecords);
        }
        throw new UnsupportedJavaTypeException(path, c, hintFor(c));
    }

    private static String hintFor(Class<?> c) {
        if (c == void.class || c == Void.class) {
            return "return a value";
        }
        if (c == char.class || c == Character.class) {
            return "use String";
        }
        if (c.isArray()) {
            Class<?> element = c.getComponentType();
            String name = element.isPrimitive()
                    ? java.lang.invoke.MethodType.methodType(element)
                            .wrap()
                            .returnType()
                            .getSimpleName()
                    : element.getSimpleName();
            return "use List<" + name + "> instead of an array";
        }
        if (c == List.class || c == Map.class || c == Optional.class) {
            return "declare its type argument, for example " + c.getSimpleName()
                    + (c == Map.class ? "<String, Integer>" : "<String>");
        }
        if (Collection.class.isAssignableFrom(c) || c == Iterable.class) {
            return "use List<...>";
        }
        if (Map.class.isAssignableFrom(c)) {
            return "use Map<..., ...>";
        }
        if (c == Object.class
                || c.isInterface()
                || c.isPrimitive()
                || c.getName().startsWith("java.")) {
            return SUPPORTED;
        }
        return "make it a record, or describe it with a CustomArrowType";
    }

    private ValueType resolveParameterized(ParameterizedType p, String path, Deque<Class<?>> enclosingRecords) {
        Type raw = p.getRawType();
        Type[] args = p.getActualTypeArguments();
        if (raw == List.class) {
            return new ValueType.ListType(p, resolve(args[0], path + "[]", enclosingRecords));
        }
        if (raw == Map.class) {
            ValueType key = resolve(args[0], path + "{key}", enclosingRecords);
            if (!(key instanceof ValueType.Scalar) && !(key instanceof ValueType.EnumType)) {
                throw new UnsupportedJavaTypeException(
                        path + "{key}", args[0], "use a String, a number, a time or an enum as a map key");
            }
            return new ValueType.MapType(p, key, resolve(args[1], path + "{value}", enclosingRecords));
        }
        if (raw == Optional.class) {
            ValueType content = resolve(args[0], path + "?", enclosingRecords);
            if (content instanceof ValueType.OptionalType) {
                throw new UnsupportedJavaTypeException(path + "?", args[0], "use a single Optional");
            }
            return new ValueType.OptionalType(p, content);
        }
        if (raw instanceof Class<?> c && c.isRecord()) {
            throw new UnsupportedJavaTypeException(path, p, "use a record without type parameters");
        }
        throw new UnsupportedJavaTypeException(path, p, raw instanceof Class<?> c ? hintFor(c) : SUPPORTED);
    }

    private ValueType resolveRecord(Class<?> c, String path, Deque<Class<?>> enclosingRecords) {
        if (c.getTypeParameters().length > 0) {
            throw new UnsupportedJavaTypeException(path, c, "use a record without type parameters");
        }
        if (enclosingRecords.contains(c)) {
            throw new UnsupportedJavaTypeException(
                    path, c, "an Arrow schema cannot contain itself; break the cycle between the records");
        }
        enclosingRecords.push(c);
        try {
            RecordComponent[] components = c.getRecordComponents();
            List<ValueType.Component> resolvedComponents = new ArrayList<>(components.length);
            Class<?>[] parameterTypes = new Class<?>[components.length];
            for (int i = 0; i < components.length; i++) {
                RecordComponent component = components[i];
                Method accessor = component.getAccessor();
                accessor.trySetAccessible();
                resolvedComponents.add(new ValueType.Component(
                        component.getName(),
                        accessor,
                        resolve(component.getGenericType(), path + "." + component.getName(), enclosingRecords)));
                parameterTypes[i] = component.getType();
            }
            Constructor<?> constructor;
            try {
                constructor = c.getDeclaredConstructor(parameterTypes);
            } catch (NoSuchMethodException e) {
                throw new IllegalStateException("record " + c.getName() + " has no canonical constructor", e);
            }
            constructor.trySetAccessible();
            return new ValueType.RecordType(c, List.copyOf(resolvedComponents), constructor);
        } finally {
            enclosingRecords.pop();
        }
    }
}
