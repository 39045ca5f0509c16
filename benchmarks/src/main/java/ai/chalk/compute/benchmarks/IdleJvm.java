package ai.chalk.compute.benchmarks;

/**
 * The baseline of a worker's footprint: a JVM that loads nothing but this class, says it is ready and waits. The
 * suite starts it with a worker's JVM flags and reads its resident memory.
 */
public final class IdleJvm {

    private IdleJvm() {}

    /** Prints {@code ready}, then waits until stdin closes. */
    public static void main(String[] args) throws Exception {
        System.out.println("ready");
        System.out.flush();
        while (System.in.read() >= 0) {
            // the suite closes stdin to end it
        }
    }
}
