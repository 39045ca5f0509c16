package ai.chalk.compute.cli;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;

/** Durations as people type them ({@code 90s}, {@code 5m}, {@code 1h}, {@code 500ms}, {@code PT30S}). */
final class DurationConverter implements CommandLine.ITypeConverter<Duration> {

    private static final Pattern SIMPLE = Pattern.compile("(\\d+)(ms|s|m|h|d)?");

    @Override
    public Duration convert(String value) {
        String text = value.strip().toLowerCase(Locale.ROOT);
        Matcher m = SIMPLE.matcher(text);
        Duration duration;
        if (m.matches()) {
            long n = Long.parseLong(m.group(1));
            String unit = m.group(2) == null ? "s" : m.group(2);
            duration = switch (unit) {
                case "ms" -> Duration.ofMillis(n);
                case "m" -> Duration.ofMinutes(n);
                case "h" -> Duration.ofHours(n);
                case "d" -> Duration.ofDays(n);
                default -> Duration.ofSeconds(n);
            };
        } else {
            try {
                duration = Duration.parse(value.strip().toUpperCase(Locale.ROOT));
            } catch (DateTimeParseException e) {
                throw new CommandLine.TypeConversionException(
                        "'" + value + "' is not a duration: write 30s, 5m, 2h, 500ms or PT30S");
            }
        }
        if (duration.isZero() || duration.isNegative()) {
            throw new CommandLine.TypeConversionException("'" + value + "' is not a positive duration");
        }
        return duration;
    }
}
