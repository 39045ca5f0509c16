package ai.chalk.compute.server.worker;

/**
 * How many of an environment's replicas' lines go to the server's log: at most {@value #LINES_PER_SECOND} a second
 * between them, so that functions printing in a loop do not flood the log of the server (and the disk it may be
 * written to); the lines past that still reach the functions' recent logs. One rate per environment: a rate per
 * replica let an environment write 200 lines a second for each replica it ran.
 */
final class ServerLogRate {
    static final int LINES_PER_SECOND = 200;

    private long windowStart = System.nanoTime();
    private int inWindow;
    private long skipped;

    /**
     * Takes a line: -1 when it is past this second's share (counted), else the lines skipped since the last one
     * taken (0 for none), which the caller reports first.
     */
    synchronized long take() {
        long now = System.nanoTime();
        if (now - windowStart >= 1_000_000_000L) {
            windowStart = now;
            inWindow = 0;
        }
        if (inWindow >= LINES_PER_SECOND) {
            skipped++;
            return -1;
        }
        inWindow++;
        return takeSkipped();
    }

    /** The lines skipped since the last one taken, now reported (0 for none). */
    synchronized long takeSkipped() {
        long report = skipped;
        skipped = 0;
        return report;
    }
}
