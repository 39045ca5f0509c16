package ai.chalk.compute.auth;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.read.ListAppender;
import java.util.List;
import org.slf4j.LoggerFactory;

/** Captures everything {@code ai.chalk.compute.auth} logs, at every level, to prove no secret is in it. */
final class LogCapture implements AutoCloseable {

    private final Logger logger = (Logger) LoggerFactory.getLogger("ai.chalk.compute.auth");
    private final Level previous = logger.getLevel();
    private final ListAppender<ILoggingEvent> appender = new ListAppender<>();

    LogCapture() {
        appender.start();
        logger.addAppender(appender);
        logger.setLevel(Level.TRACE);
    }

    /** Every captured line: formatted message plus any stack trace. */
    List<String> lines() {
        return appender.list.stream()
                .map(e -> e.getLevel() + " " + e.getFormattedMessage()
                        + (e.getThrowableProxy() == null
                                ? ""
                                : "\n" + ThrowableProxyUtil.asString(e.getThrowableProxy())))
                .toList();
    }

    String all() {
        return String.join("\n", lines());
    }

    @Override
    public void close() {
        logger.detachAppender(appender);
        logger.setLevel(previous);
        appender.stop();
    }
}
