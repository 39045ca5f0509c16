package ai.chalk.compute.function.arrow;

import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;

/** The single-valued Java types and the Arrow type each is written as. */
enum ScalarKind {
    BOOLEAN(ArrowType.Bool.INSTANCE),
    BYTE(new ArrowType.Int(8, true)),
    SHORT(new ArrowType.Int(16, true)),
    INT(new ArrowType.Int(32, true)),
    LONG(new ArrowType.Int(64, true)),
    FLOAT(new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)),
    DOUBLE(new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE)),
    STRING(ArrowType.Utf8.INSTANCE),
    BYTES(ArrowType.Binary.INSTANCE),
    INSTANT(new ArrowType.Timestamp(TimeUnit.MICROSECOND, "UTC")),
    LOCAL_DATE_TIME(new ArrowType.Timestamp(TimeUnit.MICROSECOND, null)),
    LOCAL_DATE(new ArrowType.Date(DateUnit.DAY)),
    DURATION(new ArrowType.Duration(TimeUnit.MICROSECOND)),
    DECIMAL(new ArrowType.Decimal(ScalarKind.DECIMAL_PRECISION, ScalarKind.DECIMAL_SCALE, 128));

    /** BigDecimal values are written as decimal128(38, 18): 20 digits before the point, 18 after. */
    static final int DECIMAL_PRECISION = 38;

    static final int DECIMAL_SCALE = 18;

    private final ArrowType arrowType;

    ScalarKind(ArrowType arrowType) {
        this.arrowType = arrowType;
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
