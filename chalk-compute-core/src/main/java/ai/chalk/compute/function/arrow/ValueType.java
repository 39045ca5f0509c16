package ai.chalk.compute.function.arrow;

import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.lang.reflect.Type;
import java.util.List;

/**
 * A Java type resolved once for Arrow: the shape of its values, from which its field, its writer, its
 * reader and its JSON defaults follow.
 */
sealed interface ValueType {

    /** The Java type as declared. */
    Type javaType();

    /** Whether the field may hold null: every reference type but custom types (see {@link CustomType}). */
    boolean nullable();

    /** A boolean, a number, a string, bytes, a time or a decimal; primitives are never null. */
    record Scalar(Type javaType, ScalarKind kind, boolean primitive) implements ValueType {
        @Override
        public boolean nullable() {
            return !primitive;
        }
    }

    /** An enum, carried as the name of its constant. */
    record EnumType(Class<?> javaType) implements ValueType {
        @Override
        public boolean nullable() {
            return true;
        }

        Object[] constants() {
            return javaType.getEnumConstants();
        }
    }

    /** A record, carried as a struct with one child per component. */
    record RecordType(Class<?> javaType, List<Component> components, Constructor<?> constructor) implements ValueType {
        @Override
        public boolean nullable() {
            return true;
        }
    }

    /** One component of a record. */
    record Component(String name, Method accessor, ValueType type) {}

    /** A {@code List<T>}. */
    record ListType(Type javaType, ValueType element) implements ValueType {
        @Override
        public boolean nullable() {
            return true;
        }
    }

    /** A {@code Map<K, V>}; Arrow map keys are never null. */
    record MapType(Type javaType, ValueType key, ValueType value) implements ValueType {
        @Override
        public boolean nullable() {
            return true;
        }
    }

    /** {@code Optional<T>}, {@code OptionalInt}, {@code OptionalLong} or {@code OptionalDouble}: a nullable T. */
    record OptionalType(Type javaType, ValueType content) implements ValueType {
        @Override
        public boolean nullable() {
            return true;
        }
    }

    /**
     * A type with a {@link CustomArrowType}, carried as its storage type. Not nullable unless wrapped in
     * an {@code Optional}, as Chalk's Python SDK declares its sandbox handles.
     */
    record CustomType(CustomArrowType<?, ?> codec, ValueType storage) implements ValueType {
        @Override
        public Type javaType() {
            return codec.javaType();
        }

        @Override
        public boolean nullable() {
            return false;
        }
    }
}
