package ai.chalk.compute.server.evaluation.scorer;

import org.apache.commons.text.similarity.SimilarityInput;

/**
 * A text as Commons Text's similarity algorithms read it, one code point per element, so that a character outside
 * the Basic Multilingual Plane (an emoji, say) counts once, as it does in Python's {@code len()}.
 */
final class CodePoints implements SimilarityInput<Integer> {

    private final int[] codePoints;

    CodePoints(String text) {
        this.codePoints = text.codePoints().toArray();
    }

    @Override
    public Integer at(int index) {
        return codePoints[index];
    }

    @Override
    public int length() {
        return codePoints.length;
    }
}
