package ai.chalk.compute.server.evaluation.scorer;

import java.util.ArrayList;
import java.util.List;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * The fuzzy-matching ratios as RapidFuzz 3 defines them ({@code fuzz.ratio}, {@code partial_ratio},
 * {@code token_sort_ratio}, {@code token_set_ratio}), on code points and without preprocessing, scaled to 0..1
 * instead of 0..100. {@link #ratio} is the normalized Indel similarity, 2·LCS / (len(a) + len(b)).
 */
final class FuzzyRatios {

    private FuzzyRatios() {}

    static double ratio(String a, String b) {
        return ratio(a.codePoints().toArray(), b.codePoints().toArray());
    }

    /** The best {@link #ratio} of the shorter string against every window of the longer one. */
    static double partialRatio(String s1, String s2) {
        int[] a = s1.codePoints().toArray();
        int[] b = s2.codePoints().toArray();
        if (a.length == 0 && b.length == 0) {
            return 1.0;
        }
        if (a.length == 0 || b.length == 0) {
            return 0.0;
        }
        double best = a.length <= b.length ? bestWindow(a, b) : bestWindow(b, a);
        if (best < 1.0 && a.length == b.length) {
            best = Math.max(best, bestWindow(b, a));
        }
        return best;
    }

    /** Both strings' whitespace-separated tokens sorted and rejoined, then {@link #ratio}. */
    static double tokenSortRatio(String a, String b) {
        return ratio(String.join(" ", sortedTokens(a)), String.join(" ", sortedTokens(b)));
    }

    /**
     * The token sets' intersection and differences compared: 1 when one set contains the other, else the best ratio
     * of "intersection" against "intersection + rest of a" and "+ rest of b", and of those two against each other.
     */
    static double tokenSetRatio(String s1, String s2) {
        SortedSet<String> a = new TreeSet<>(tokens(s1));
        SortedSet<String> b = new TreeSet<>(tokens(s2));
        if (a.isEmpty() || b.isEmpty()) {
            return 0.0;
        }
        SortedSet<String> intersection = new TreeSet<>(a);
        intersection.retainAll(b);
        SortedSet<String> onlyA = new TreeSet<>(a);
        onlyA.removeAll(b);
        SortedSet<String> onlyB = new TreeSet<>(b);
        onlyB.removeAll(a);
        if (!intersection.isEmpty() && (onlyA.isEmpty() || onlyB.isEmpty())) {
            return 1.0;
        }
        String sect = String.join(" ", intersection);
        String withA = sect.isEmpty() ? String.join(" ", onlyA) : sect + " " + String.join(" ", onlyA);
        String withB = sect.isEmpty() ? String.join(" ", onlyB) : sect + " " + String.join(" ", onlyB);
        double result = ratio(withA, withB);
        if (!sect.isEmpty()) {
            result = Math.max(result, Math.max(ratio(sect, withA), ratio(sect, withB)));
        }
        return result;
    }

    private static double bestWindow(int[] shorter, int[] longer) {
        int m = shorter.length;
        int n = longer.length;
        double best = 0;
        // windows sliding in from the left edge, full windows, then windows sliding out at the right edge
        for (int start = -m + 1; start < n && best < 1.0; start++) {
            int from = Math.max(0, start);
            int to = Math.min(n, start + m);
            if (to <= from) {
                continue;
            }
            int[] window = java.util.Arrays.copyOfRange(longer, from, to);
            best = Math.max(best, ratio(shorter, window));
        }
        return best;
    }

    private static double ratio(int[] a, int[] b) {
        int total = a.length + b.length;
        return total == 0 ? 1.0 : 2.0 * longestCommonSubsequence(a, b) / total;
    }

    private static int longestCommonSubsequence(int[] a, int[] b) {
        int[] previous = new int[b.length + 1];
        int[] current = new int[b.length + 1];
        for (int i = 1; i <= a.length; i++) {
            for (int j = 1; j <= b.length; j++) {
                current[j] = a[i - 1] == b[j - 1] ? previous[j - 1] + 1 : Math.max(previous[j], current[j - 1]);
            }
            int[] swap = previous;
            previous = current;
            current = swap;
        }
        return previous[b.length];
    }

    private static List<String> sortedTokens(String text) {
        List<String> tokens = tokens(text);
        tokens.sort(null);
        return tokens;
    }

    private static List<String> tokens(String text) {
        List<String> tokens = new ArrayList<>();
        for (String token : text.strip().split("\\s+")) {
            if (!token.isEmpty()) {
                tokens.add(token);
            }
        }
        return tokens;
    }
}
