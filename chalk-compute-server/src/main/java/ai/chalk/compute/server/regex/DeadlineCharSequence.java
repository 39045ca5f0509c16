package ai.chalk.compute.server.regex;

/**
 * A text that refuses to be read after a deadline. {@link java.util.regex.Matcher} has no timeout, but it reads its
 * input through {@link #charAt}; checking the clock there stops a catastrophically backtracking match.
 */
public final class DeadlineCharSequence implements CharSequence {

    /** The match ran past its deadline. */
    public static final class DeadlineExceeded extends RuntimeException {
        private static final long serialVersionUID = 1L;

        DeadlineExceeded() {
            super("regular expression match ran past its deadline", null, false, false);
        }
    }

    private final CharSequence text;
    private final long deadlineNanos;
    private int reads;

    /**
     * @param text          the text
     * @param deadlineNanos the {@link System#nanoTime()} past which reading it throws {@link DeadlineExceeded}
     */
    public DeadlineCharSequence(CharSequence text, long deadlineNanos) {
        this.text = text;
        this.deadlineNanos = deadlineNanos;
    }

    @Override
    public char charAt(int index) {
        // the clock is read every 4096 characters: cheap enough for ordinary matches
        if ((++reads & 0xFFF) == 0 && System.nanoTime() - deadlineNanos > 0) {
            throw new DeadlineExceeded();
        }
        return text.charAt(index);
    }

    @Override
    public int length() {
        return text.length();
    }

    @Override
    public CharSequence subSequence(int start, int end) {
        return new DeadlineCharSequence(text.subSequence(start, end), deadlineNanos);
    }

    @Override
    public String toString() {
        return text.toString();
    }
}
