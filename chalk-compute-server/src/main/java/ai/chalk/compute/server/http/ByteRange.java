package ai.chalk.compute.server.http;

import java.util.Optional;
import java.util.regex.Pattern;

/**
 * One range of an object's bytes, as a {@code Range: bytes=...} header asks for it ({@code first-last}, {@code first-}
 * or the suffix {@code -n}), resolved against the object's size.
 *
 * @param first  the first byte's offset
 * @param length how many bytes
 */
record ByteRange(long first, long length) {

    private static final Pattern SINGLE = Pattern.compile("bytes=(\\d*)-(\\d*)");

    /** The inclusive offset of the last byte. */
    long last() {
        return first + length - 1;
    }

    /**
     * The range {@code header} asks for in an object of {@code size} bytes: empty for no header, or one this server
     * serves whole (several ranges, another unit: RFC 9110 lets a server ignore those).
     *
     * @throws Unsatisfiable when the range lies wholly past the end of the object (a 416)
     */
    static Optional<ByteRange> parse(String header, long size) throws Unsatisfiable {
        if (header == null) {
            return Optional.empty();
        }
        var m = SINGLE.matcher(header.trim());
        if (!m.matches() || (m.group(1).isEmpty() && m.group(2).isEmpty())) {
            return Optional.empty();
        }
        try {
            if (m.group(1).isEmpty()) {
                long suffix = Long.parseLong(m.group(2));
                if (suffix == 0 || size == 0) {
                    throw new Unsatisfiable();
                }
                long n = Math.min(suffix, size);
                return Optional.of(new ByteRange(size - n, n));
            }
            long first = Long.parseLong(m.group(1));
            if (first >= size) {
                throw new Unsatisfiable();
            }
            long last = m.group(2).isEmpty() ? size - 1 : Math.min(Long.parseLong(m.group(2)), size - 1);
            if (last < first) {
                return Optional.empty();
            }
            return Optional.of(new ByteRange(first, last - first + 1));
        } catch (NumberFormatException e) {
            // digits past a long: no object is that large
            throw new Unsatisfiable();
        }
    }

    /** A range past the end of the object. */
    static final class Unsatisfiable extends Exception {
        Unsatisfiable() {
            super(null, null, false, false);
        }
    }
}
