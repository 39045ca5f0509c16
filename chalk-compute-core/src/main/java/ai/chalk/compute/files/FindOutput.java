package ai.chalk.compute.files;

import io.grpc.Status;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.UnaryOperator;

/**
 * Reads what {@code find -printf} prints for listings and stats into {@link FileEntry}s. Every field ends with NUL,
 * the one byte no file name contains, so names with newlines or any other character come through as they are.
 */
final class FindOutput {

    /** The fields printed for each file, each ended by NUL: type, size, mode, mtime, link target, name. */
    static final String FORMAT = "%y\\0%s\\0%m\\0%T@\\0%l\\0%f\\0";

    private static final int FIELDS = 6;

    private FindOutput() {}

    /**
     * The entries in {@code output}.
     *
     * @param operation what the user asked for, and the path asked about, for messages
     * @param pathOf    the full path of an entry from its name
     */
    static List<FileEntry> entries(byte[] output, String operation, String path, UnaryOperator<String> pathOf) {
        List<String> fields = new ArrayList<>();
        int start = 0;
        for (int i = 0; i < output.length; i++) {
            if (output[i] == 0) {
                fields.add(new String(output, start, i - start, StandardCharsets.UTF_8));
                start = i + 1;
            }
        }
        if (start != output.length || fields.size() % FIELDS != 0) {
            throw new SandboxFileException(
                    Status.Code.INTERNAL,
                    operation,
                    path,
                    "unexpected output from find (" + output.length + " bytes, " + fields.size() + " fields)",
                    "");
        }
        List<FileEntry> entries = new ArrayList<>(fields.size() / FIELDS);
        for (int i = 0; i < fields.size(); i += FIELDS) {
            String name = fields.get(i + 5);
            String link = fields.get(i + 4);
            try {
                FileType type = FileType.fromFindLetter(fields.get(i));
                entries.add(new FileEntry(
                        name,
                        pathOf.apply(name),
                        type,
                        Long.parseLong(fields.get(i + 1)),
                        Integer.parseInt(fields.get(i + 2), 8),
                        parseTime(fields.get(i + 3)),
                        type == FileType.SYMLINK ? Optional.of(link) : Optional.empty()));
            } catch (NumberFormatException | ArithmeticException e) {
                throw new SandboxFileException(
                        Status.Code.INTERNAL,
                        operation,
                        path,
                        "unexpected output from find for " + FilePaths.quote(name) + ": " + e.getMessage(),
                        "");
            }
        }
        return entries;
    }

    /** Parses {@code find}'s {@code %T@}: seconds since the epoch with a fraction. */
    static Instant parseTime(String secondsWithFraction) {
        BigDecimal value = new BigDecimal(secondsWithFraction);
        BigDecimal seconds = value.setScale(0, RoundingMode.FLOOR);
        long nanos = value.subtract(seconds)
                .movePointRight(9)
                .setScale(0, RoundingMode.DOWN)
                .longValueExact();
        return Instant.ofEpochSecond(seconds.longValueExact(), nanos);
    }
}
