package ai.chalk.compute.server.evaluation.scorer;

/**
 * The work a string scorer may do for one row, checked before it starts: its algorithms take time in proportion to the
 * product of the texts' lengths (the edit distance, the longest common subsequence) or worse ({@code partial} compares
 * the shorter text with every window of the longer one), and nothing stops them once started. Two texts of a million
 * characters from a dataset held a server thread for days; past the budget the row fails, saying why.
 */
final class RowWork {

    /** About a second of a server core. */
    static final long BUDGET = 400_000_000L;

    private RowWork() {}

    /** Refuses a row whose texts {@code a} and {@code b} would take {@code scorer} past {@link #BUDGET}. */
    static void check(String scorer, String a, String b, long operations) {
        if (operations > BUDGET) {
            throw new RowScoringException(scorer + " would take about " + operations + " steps for texts of "
                    + a.length() + " and " + b.length() + " characters, past the " + BUDGET
                    + " a row may take; compare shorter texts (a summary, a prefix) or use exact_match or contains");
        }
    }

    /** The steps of an algorithm quadratic in the texts' lengths. */
    static long product(String a, String b) {
        return (long) a.length() * b.length();
    }

    /** The steps of {@code partial}: every window of the longer text, each compared with the shorter. */
    static long windows(String a, String b) {
        long shorter = Math.min(a.length(), b.length());
        long longer = Math.max(a.length(), b.length());
        try {
            return Math.multiplyExact(Math.multiplyExact(longer + shorter, shorter), shorter);
        } catch (ArithmeticException overflow) {
            return Long.MAX_VALUE; // two texts of a couple of million characters
        }
    }
}
