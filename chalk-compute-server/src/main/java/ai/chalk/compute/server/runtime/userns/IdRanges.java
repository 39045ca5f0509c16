package ai.chalk.compute.server.runtime.userns;

import java.util.BitSet;
import java.util.Optional;

/**
 * The id ranges of one server's sandboxes: {@code slots} ranges of {@link IdRange#SIZE} ids from {@code base} up, one
 * per running sandbox, handed back when it is gone. Ranges are disjoint, so no two sandboxes share an id, and a
 * range is only reused once the sandbox that had it has no process left.
 */
public final class IdRanges {

    /**
     * Where ranges start by default: 2^30, above the ranges {@code /etc/subuid} hands out to people (100000 on) and
     * below 2^31, which some tools still read as a signed number.
     */
    public static final long DEFAULT_BASE = 1L << 30;
    /** 4096 ranges of 65536: 2^28 ids, ending at 2^30 + 2^28. */
    public static final int DEFAULT_SLOTS = 4096;

    private final long base;
    private final int slots;
    private final BitSet used = new BitSet();

    public IdRanges(long base, int slots) {
        if (slots <= 0) {
            throw new IllegalArgumentException("slots must be positive");
        }
        new IdRange(base, slots * IdRange.SIZE); // checks the whole span
        this.base = base;
        this.slots = slots;
    }

    /** A free range, or empty when every slot is taken. */
    public synchronized Optional<IdRange> acquire() {
        int slot = used.nextClearBit(0);
        if (slot >= slots) {
            return Optional.empty();
        }
        used.set(slot);
        return Optional.of(new IdRange(base + slot * IdRange.SIZE, IdRange.SIZE));
    }

    /** Hands {@code range} back (once nothing of its sandbox runs). */
    public synchronized void release(IdRange range) {
        long offset = range.first() - base;
        if (offset >= 0 && offset % IdRange.SIZE == 0 && offset / IdRange.SIZE < slots) {
            used.clear((int) (offset / IdRange.SIZE));
        }
    }
}
