package ai.chalk.compute.server.image;

/** Where a build writes its output as it happens: one call per line, without the line break. */
@FunctionalInterface
public interface BuildLog {

    /** Records one line of build output. */
    void line(String text);
}
