package ai.chalk.compute.server.runtime.local;

/**
 * What every sandbox of a local runtime gets unless it asks for less, and how many may run at once: without these,
 * one tenant's fork bomb, memory hog or disk filler starves every other tenant and the server itself.
 *
 * @param memoryBytes  memory of a sandbox that sets no limit (its file system's pages count against it too)
 * @param layerBytes   size of a sandbox's writable layer, a file system of its own ({@code ENOSPC} past it)
 * @param pidsMax      processes and threads one sandbox may have at once
 * @param openFiles    {@code RLIMIT_NOFILE} (soft and hard) of every process of a sandbox
 * @param maxSandboxes sandboxes running at once; the next create is refused with a message saying so
 */
public record SandboxDefaults(long memoryBytes, long layerBytes, long pidsMax, int openFiles, int maxSandboxes) {

    /** 4 GiB of memory and of layer, 1024 processes, 16384 open files, 256 sandboxes. */
    public static final SandboxDefaults STANDARD = new SandboxDefaults(4L << 30, 4L << 30, 1024, 16_384, 256);

    public SandboxDefaults {
        if (memoryBytes < (16L << 20)
                || layerBytes < (1L << 20)
                || pidsMax < 16
                || openFiles < 64
                || maxSandboxes < 1) {
            throw new IllegalArgumentException("sandbox defaults too small to run anything: memory " + memoryBytes
                    + " B (min 16 MiB), layer " + layerBytes + " B (min 1 MiB), pids " + pidsMax + " (min 16), open"
                    + " files " + openFiles + " (min 64), sandboxes " + maxSandboxes + " (min 1)");
        }
    }
}
