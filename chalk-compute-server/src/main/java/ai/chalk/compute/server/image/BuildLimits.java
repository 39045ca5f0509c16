package ai.chalk.compute.server.image;

/**
 * What one step of an image build may use, on every runtime: a build step runs commands from the image spec, written
 * by whoever creates the sandbox, with root in its build sandbox, so it is held to limits as a sandbox is. Without
 * them one step's fork bomb takes every pid of the host, and one {@code tail /dev/zero} its memory.
 *
 * @param memoryBytes memory of the step's processes, with no swap beyond it
 * @param milliCpus   CPU time, in thousandths of a core
 * @param openFiles   {@code RLIMIT_NOFILE} of every process of the step
 * @param processes   processes and threads of the step at once
 */
public record BuildLimits(long memoryBytes, long milliCpus, int openFiles, long processes) {

    /** Memory of one build step by default: 4 GiB. */
    public static final long MEMORY_BYTES = 4L << 30;
    /** CPU of one build step by default: two cores. */
    public static final long MILLI_CPUS = 2_000;
    /** Open files of a build step's processes by default. */
    public static final int OPEN_FILES = 8192;
    /** Processes of one build step by default. */
    public static final long PROCESSES = 4096;

    /** The limits of a build step unless set otherwise. */
    public static final BuildLimits DEFAULTS = new BuildLimits(MEMORY_BYTES, MILLI_CPUS, OPEN_FILES, PROCESSES);

    public BuildLimits {
        if (memoryBytes < (16L << 20) || milliCpus < 10 || openFiles < 64 || processes < 16) {
            throw new IllegalArgumentException("build limits too small to run a shell: memory " + memoryBytes
                    + " (min 16 MiB), cpu " + milliCpus + " (min 10 milli-cpus), files " + openFiles
                    + " (min 64), processes " + processes + " (min 16)");
        }
    }
}
