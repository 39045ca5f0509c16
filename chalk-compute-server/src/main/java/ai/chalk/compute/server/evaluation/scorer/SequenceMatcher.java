package ai.chalk.compute.server.evaluation.scorer;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Python's {@code difflib.SequenceMatcher(None, a, b).ratio()} on code points (Ratcliff/Obershelp: the longest
 * common block, recursively to its left and right; 2·matched / total), with difflib's "autojunk" rule for a
 * {@code b} of 200 or more characters, so scores equal the Python function's, which {@code sequence} names.
 */
final class SequenceMatcher {

    private final int[] a;
    private final int[] b;
    private final Map<Integer, int[]> b2j = new HashMap<>();

    private SequenceMatcher(String a, String b) {
        this.a = a.codePoints().toArray();
        this.b = b.codePoints().toArray();
        Map<Integer, List<Integer>> positions = new HashMap<>();
        for (int j = 0; j < this.b.length; j++) {
            positions.computeIfAbsent(this.b[j], c -> new ArrayList<>()).add(j);
        }
        // difflib's autojunk: in a long b, an element more frequent than 1% (+1) is "popular" and never starts a match
        int popularAbove = this.b.length >= 200 ? this.b.length / 100 + 1 : Integer.MAX_VALUE;
        positions.forEach((element, js) -> {
            if (js.size() <= popularAbove) {
                b2j.put(element, js.stream().mapToInt(Integer::intValue).toArray());
            }
        });
    }

    /** The ratio 2·M / (len(a) + len(b)), 1 for two empty strings. */
    static double ratio(String a, String b) {
        SequenceMatcher matcher = new SequenceMatcher(a, b);
        int total = matcher.a.length + matcher.b.length;
        return total == 0 ? 1.0 : 2.0 * matcher.matched() / total;
    }

    private int matched() {
        int matched = 0;
        Deque<int[]> queue = new ArrayDeque<>();
        queue.push(new int[] {0, a.length, 0, b.length});
        while (!queue.isEmpty()) {
            int[] range = queue.pop();
            int alo = range[0];
            int ahi = range[1];
            int blo = range[2];
            int bhi = range[3];
            int[] match = longestMatch(alo, ahi, blo, bhi);
            int i = match[0];
            int j = match[1];
            int k = match[2];
            if (k > 0) {
                matched += k;
                if (alo < i && blo < j) {
                    queue.push(new int[] {alo, i, blo, j});
                }
                if (i + k < ahi && j + k < bhi) {
                    queue.push(new int[] {i + k, ahi, j + k, bhi});
                }
            }
        }
        return matched;
    }

    /** difflib's find_longest_match with no junk function: the earliest longest block, widened over popular ones. */
    private int[] longestMatch(int alo, int ahi, int blo, int bhi) {
        int besti = alo;
        int bestj = blo;
        int bestsize = 0;
        Map<Integer, Integer> j2len = new HashMap<>();
        for (int i = alo; i < ahi; i++) {
            Map<Integer, Integer> next = new HashMap<>();
            int[] js = b2j.get(a[i]);
            if (js != null) {
                for (int j : js) {
                    if (j < blo) {
                        continue;
                    }
                    if (j >= bhi) {
                        break;
                    }
                    int k = j2len.getOrDefault(j - 1, 0) + 1;
                    next.put(j, k);
                    if (k > bestsize) {
                        besti = i - k + 1;
                        bestj = j - k + 1;
                        bestsize = k;
                    }
                }
            }
            j2len = next;
        }
        while (besti > alo && bestj > blo && a[besti - 1] == b[bestj - 1]) {
            besti--;
            bestj--;
            bestsize++;
        }
        while (besti + bestsize < ahi && bestj + bestsize < bhi && a[besti + bestsize] == b[bestj + bestsize]) {
            bestsize++;
        }
        return new int[] {besti, bestj, bestsize};
    }
}
