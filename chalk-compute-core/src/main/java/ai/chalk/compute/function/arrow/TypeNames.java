package ai.chalk.compute.function.arrow;

import java.lang.reflect.GenericArrayType;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.Arrays;
import java.util.stream.Collectors;

/** How the SDK writes a Java type in messages: as in source code, without packages ({@code Map<String, List<Order>>}). */
public final class TypeNames {

    private TypeNames() {}

    /**
     * The type as it would be written in source code, without package names.
     *
     * @param type any type
     * @return for example {@code int}, {@code byte[]}, {@code Optional<Order>} or {@code Fns.Order} for a nested class
     */
    public static String simple(Type type) {
        if (type instanceof Class<?> c) {
            if (c.isArray()) {
                return simple(c.getComponentType()) + "[]";
            }
            return c.getEnclosingClass() != null && !c.isAnonymousClass()
                    ? simple(c.getEnclosingClass()) + "." + c.getSimpleName()
                    : c.getSimpleName();
        }
        if (type instanceof ParameterizedType p) {
            return simple(p.getRawType())
                    + Arrays.stream(p.getActualTypeArguments())
                            .map(TypeNames::simple)
                            .collect(Collectors.joining(", ", "<", ">"));
        }
        if (type instanceof GenericArrayType a) {
            return simple(a.getGenericComponentType()) + "[]";
        }
        // type variables and wildcards read well as Java prints them ("T", "? extends Number")
        return type.getTypeName().replaceAll("\\b[a-z][\\w]*\\.", "");
    }
}
