package ai.chalk.compute.function.arrow;

import java.util.Map;
import org.apache.arrow.vector.types.pojo.Field;

/**
 * Teaches the Arrow mapping a Java type it cannot describe by itself: values are converted to a
 * storage type it can describe (usually a small record) and carried as that, with metadata naming the
 * Java type so that a catalog client can tell it apart from a look-alike struct.
 *
 * <p>The SDK uses this for {@link ai.chalk.compute.sandbox.Sandbox} handles, which travel as their id,
 * and for {@link ai.chalk.compute.evaluation.EvaluationScorerResult}. Add your own with
 * {@link ArrowTypeMapping#with(CustomArrowType)}:
 * <pre>{@code
 * record StoredMoney(String currency, BigDecimal amount) {}
 *
 * class MoneyType implements CustomArrowType<Money, StoredMoney> {
 *     public Class<Money> javaType() { return Money.class; }
 *     public Class<StoredMoney> storageType() { return StoredMoney.class; }
 *     public StoredMoney toStorage(Money m) { return new StoredMoney(m.currency().getCurrencyCode(), m.amount()); }
 *     public Money fromStorage(StoredMoney s, DecodeContext context) { return Money.of(s.amount(), s.currency()); }
 * }
 * }</pre>
 *
 * <p>A custom-typed field is not nullable (declare {@code Optional<Money>} for one that is) and carries
 * {@link ChalkMetadata#JAVA_TYPE} with the Java class's name, plus whatever {@link #metadata()} adds.
 *
 * @param <T> the Java type
 * @param <S> the storage type, which the standard mapping describes
 */
public interface CustomArrowType<T, S> {

    /** The Java type this describes; values of exactly this class use it. */
    Class<T> javaType();

    /** The type values are converted to before they are written, described by the standard mapping. */
    Class<S> storageType();

    /**
     * Converts a value for writing.
     *
     * @param value the value, never {@code null}
     * @return its storage form
     * @throws IllegalArgumentException when this value cannot be sent; the message is reported with its row and column
     */
    S toStorage(T value);

    /**
     * Rebuilds a value from what was read.
     *
     * @param storage the storage form, never {@code null}
     * @param context the services the caller provided for rebuilding values, such as a {@code SandboxClient}
     * @return the value
     * @throws IllegalArgumentException when the stored form is unusable; reported with its row and column
     */
    T fromStorage(S storage, DecodeContext context);

    /**
     * Field metadata to add besides {@link ChalkMetadata#JAVA_TYPE}, for example
     * {@link ChalkMetadata#PYTHON_TYPE} for a type Chalk's Python SDK knows too.
     */
    default Map<String, String> metadata() {
        return Map.of();
    }

    /**
     * Adjusts the field the standard mapping made for the storage type, for a wire format it cannot
     * express (say, {@code large_utf8} instead of {@code utf8}); values are still written and read
     * as the storage type.
     *
     * @param standard the field as the standard mapping made it, with this type's metadata
     * @return the field to use
     */
    default Field storageField(Field standard) {
        return standard;
    }
}
