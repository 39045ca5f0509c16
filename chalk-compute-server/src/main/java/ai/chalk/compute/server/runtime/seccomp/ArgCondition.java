package ai.chalk.compute.server.runtime.seccomp;

/**
 * One comparison of a syscall argument, as libseccomp's {@code struct scmp_arg_cmp}. Comparisons see all 64 bits of
 * the register, even of an argument the kernel reads as a 32-bit int: a rule that allows must therefore name exact
 * values (a caller setting high bits is then refused, which fails closed), and a value the kernel truncates is only
 * ever matched through a mask (see {@link ArgValues}).
 *
 * @param arg    the argument's index, 0 to 5
 * @param op     the comparison
 * @param datumA the value compared with, or the mask for {@link Op#MASKED_EQ}
 * @param datumB the value the masked argument must equal for {@link Op#MASKED_EQ}, else 0
 */
record ArgCondition(int arg, Op op, long datumA, long datumB) {

    /** libseccomp's {@code enum scmp_compare}. */
    enum Op {
        NE(1),
        LT(2),
        LE(3),
        EQ(4),
        GE(5),
        GT(6),
        MASKED_EQ(7);

        final int code;

        Op(int code) {
            this.code = code;
        }
    }

    ArgCondition {
        if (arg < 0 || arg > 5) {
            throw new IllegalArgumentException("a syscall has arguments 0 to 5, not " + arg);
        }
    }

    static ArgCondition eq(int arg, long value) {
        return new ArgCondition(arg, Op.EQ, value, 0);
    }

    static ArgCondition le(int arg, long value) {
        return new ArgCondition(arg, Op.LE, value, 0);
    }

    /** {@code (argument & mask) == value}. */
    static ArgCondition masked(int arg, long mask, long value) {
        return new ArgCondition(arg, Op.MASKED_EQ, mask, value);
    }
}
