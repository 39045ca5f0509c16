package ai.chalk.compute.server.runtime.seccomp;

import java.util.ArrayList;
import java.util.List;

/**
 * Sets of argument values as alternatives of single masked comparisons. libseccomp compares each argument at most
 * once per rule and leaves unspecified which rule wins when rules of different actions overlap, so the filter never
 * mixes actions on one syscall: "any value but these" and "a value in this range" become several allowing rules, each
 * fixing some bits of the argument (a prefix, as an address range becomes CIDR blocks).
 */
final class ArgValues {

    private ArgValues() {}

    /**
     * Every value of the argument's low {@code width} bits but {@code excluded}; the bits above are not compared,
     * as for an argument the kernel truncates to {@code width} bits (an ioctl request is an unsigned int, so
     * {@code 0x1_0000_5412} is still TIOCSTI to the kernel).
     */
    static List<ArgCondition> anyBut(int arg, int width, long... excluded) {
        if (width < 1 || width > 63) {
            throw new IllegalArgumentException("width must be 1 to 63 bits, not " + width);
        }
        List<ArgCondition> out = new ArrayList<>();
        complement(arg, width, 0, 0, excluded, out);
        return out;
    }

    private static void complement(
            int arg, int width, long prefix, int length, long[] excluded, List<ArgCondition> out) {
        long mask = prefixMask(width, length);
        boolean hit = false;
        for (long e : excluded) {
            hit |= (e & mask) == prefix;
        }
        if (!hit) {
            out.add(ArgCondition.masked(arg, mask, prefix));
            return;
        }
        if (length == width) {
            return; // the prefix is a whole excluded value
        }
        long bit = 1L << (width - 1 - length);
        complement(arg, width, prefix, length + 1, excluded, out);
        complement(arg, width, prefix | bit, length + 1, excluded, out);
    }

    private static long prefixMask(int width, int length) {
        long all = (1L << width) - 1;
        return all & ~((1L << (width - length)) - 1);
    }

    /**
     * The values {@code from} to {@code to} inclusive (non-negative, below 2^62), over all 64 bits: a value with any
     * higher bit set matches none of the alternatives.
     */
    static List<ArgCondition> between(int arg, long from, long to) {
        if (from < 0 || to < from || to >= 1L << 62) {
            throw new IllegalArgumentException("not a range of small non-negative values: " + from + " to " + to);
        }
        List<ArgCondition> out = new ArrayList<>();
        long v = from;
        while (v <= to) {
            long size = v == 0 ? Long.highestOneBit(to + 1) : Long.lowestOneBit(v);
            while (v + size - 1 > to) {
                size >>= 1;
            }
            out.add(ArgCondition.masked(arg, ~(size - 1), v));
            v += size;
        }
        return out;
    }
}
