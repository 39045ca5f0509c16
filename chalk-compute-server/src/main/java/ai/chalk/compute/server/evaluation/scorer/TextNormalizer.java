package ai.chalk.compute.server.evaluation.scorer;

import java.util.Locale;
import java.util.regex.Pattern;

/**
 * The text options several scorers share: trimming, collapsing runs of whitespace to one space, and case folding
 * (upper then lower case, so that "Straße" and "STRASSE" fold alike, as Python's {@code casefold} does).
 *
 * @param trim               strip leading and trailing whitespace
 * @param collapseWhitespace replace each run of whitespace with one space
 * @param caseInsensitive    fold case
 */
record TextNormalizer(boolean trim, boolean collapseWhitespace, boolean caseInsensitive) {

    private static final Pattern WHITESPACE = Pattern.compile("\\s+", Pattern.UNICODE_CHARACTER_CLASS);

    static TextNormalizer caseOnly(boolean caseInsensitive) {
        return new TextNormalizer(false, false, caseInsensitive);
    }

    String apply(String text) {
        String result = text;
        if (collapseWhitespace) {
            result = WHITESPACE.matcher(result).replaceAll(" ");
        }
        if (trim || collapseWhitespace) {
            result = result.strip();
        }
        if (caseInsensitive) {
            result = result.toUpperCase(Locale.ROOT).toLowerCase(Locale.ROOT);
        }
        return result;
    }
}
