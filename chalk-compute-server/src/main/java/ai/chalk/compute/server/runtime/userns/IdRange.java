package ai.chalk.compute.server.runtime.userns;

/**
 * The host user and group ids a sandbox's ids 0 to {@code count - 1} stand for: its root is host id {@code first},
 * an id no account on the host has and no other sandbox uses.
 */
public record IdRange(long first, long count) {

    /** The ids a sandbox gets: the 16-bit range images are built for (nobody is 65534). */
    public static final long SIZE = 65_536;

    public IdRange {
        if (first <= 0 || count <= 0 || first + count > 0xFFFF_FFFFL) {
            throw new IllegalArgumentException("not a usable id range: " + first + "+" + count);
        }
    }

    /** The line of {@code /proc/PID/uid_map} and {@code gid_map}: inside 0 .. count-1 is outside first ... */
    String mapLine() {
        return "0 " + first + " " + count + "\n";
    }

    /** Whether the host id {@code id} belongs to this range. */
    public boolean contains(long id) {
        return id >= first && id < first + count;
    }
}
