package ai.chalk.compute.function.arrow;

import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import org.apache.arrow.vector.types.TimeUnit;

/** Converts instants and durations to and from counts of an Arrow time unit. */
final class TimeUnits {

    private TimeUnits() {}

    /** The instant as a count of units since the epoch, rounded down. */
    static long fromInstant(Instant instant, TimeUnit unit) {
        return switch (unit) {
            case SECOND -> instant.getEpochSecond();
            case MILLISECOND -> instant.toEpochMilli();
            case MICROSECOND ->
                Math.addExact(Math.multiplyExact(instant.getEpochSecond(), 1_000_000L), instant.getNano() / 1_000);
            case NANOSECOND ->
                Math.addExact(Math.multiplyExact(instant.getEpochSecond(), 1_000_000_000L), instant.getNano());
        };
    }

    static Instant toInstant(long count, TimeUnit unit) {
        return switch (unit) {
            case SECOND -> Instant.ofEpochSecond(count);
            case MILLISECOND -> Instant.ofEpochMilli(count);
            case MICROSECOND ->
                Instant.ofEpochSecond(Math.floorDiv(count, 1_000_000L), Math.floorMod(count, 1_000_000L) * 1_000L);
            case NANOSECOND ->
                Instant.ofEpochSecond(Math.floorDiv(count, 1_000_000_000L), Math.floorMod(count, 1_000_000_000L));
        };
    }

    /** The duration as a count of units, rounded down. */
    static long fromDuration(Duration duration, TimeUnit unit) {
        return switch (unit) {
            case SECOND -> duration.getSeconds();
            case MILLISECOND ->
                Math.addExact(Math.multiplyExact(duration.getSeconds(), 1_000L), duration.getNano() / 1_000_000);
            case MICROSECOND ->
                Math.addExact(Math.multiplyExact(duration.getSeconds(), 1_000_000L), duration.getNano() / 1_000);
            case NANOSECOND ->
                Math.addExact(Math.multiplyExact(duration.getSeconds(), 1_000_000_000L), duration.getNano());
        };
    }

    static Duration toDuration(long count, TimeUnit unit) {
        return switch (unit) {
            case SECOND -> Duration.ofSeconds(count);
            case MILLISECOND -> Duration.of(count, ChronoUnit.MILLIS);
            case MICROSECOND -> Duration.of(count, ChronoUnit.MICROS);
            case NANOSECOND -> Duration.ofNanos(count);
        };
    }
}
