package ai.chalk.compute.function.arrow;

import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;

/** The single-valued Java types and the Arrow type each is written as. */
enum ScalarKind {
    BOOLEAN(ArrowType.Bool.INSTANCE, Boolean.class),
    BYTE(new ArrowType.Int(8, true), Byte.class),
    SHORT(new ArrowType.Int(16, true), Short.class),
    INT(new ArrowType.Int(32, true), Integer.class),
    LONG(new ArrowType.Int(64, true), Long.class),
    FLOAT(new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE), Float.class),
    DOUBLE(new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE), Double.class),
    STRING(ArrowType.Utf8.INSTANCE, String.class),
    BYTES(ArrowType.Binary.INSTANCE, byte[].class),
    INSTANT(new ArrowType.Timestamp(TimeUnit.MICROSECOND, "UTC"), Instant.class),
    LOCAL_DATE_TIME(new ArrowType.Timestamp(TimeUnit.MICROSECOND, null), LocalDateTime.class),
    LOCAL_DATE(new ArrowType.Date(DateUnit.DAY), LocalDate.class),
    DURATION(new ArrowType.Duration(TimeUnit.MICROSECOND), Duration.class),
    DECIMAL(new ArrowType.Decimal(ScalarKind.DECIMAL_PRECISION, ScalarKind.DECIMAL_SCALE, 128), BigDecimal.class);

    /** BigDecimal values are written as decimal128(38, 18): 20 digits before the point, 18 after. */
    static final int DECIMAL_PRECISION = 38;

    static final int DECIMAL_SCALE = 18;

    private final ArrowType arrowType;

    private final Class<?> boxedType;

    ScalarKind(ArrowType arrowType, Class<?> boxedType) {
        this.arrowType = arrowType;
        this.boxedType = boxedType;
    }

    /** The class a value of this kind has once boxed (what a caller's argument must be an instance of). */
    Class<?> boxedType() {
        return boxedType;
    }

    ArrowType arrowType() {
        return arrowType;
    }

    boolean isInteger() {
        return this == BYTE || this == SHORT || this == INT || this == LONG;
    }

    boolean isFloatingPoint() {
        return this == FLOAT || this == DOUBLE;
    }
}
