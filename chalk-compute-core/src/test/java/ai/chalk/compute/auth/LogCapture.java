package ai.chalk.compute.auth;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.read.ListAppender;
import java.util.List;
import org.slf4j.LoggerFactory;

/** Captures everything {@code ai.chalk.compute.auth} (or another logger) logs, at every level, to prove no secret is in it. */
public final class LogCapture implements AutoCloseable {

    private final Logger logger;
    private final Level previous;
    private final ListAppender<ILoggingEvent> appender = new ListAppender<>();

    LogCapture() {
        this("ai.chalk.compute.auth");
    }

    /** Captures what {@code loggerName} and the loggers below it log. */
    public LogCapture(String loggerName) {
        logger = (Logger) LoggerFactory.getLogger(loggerName);
        previous = logger.getLevel();
        appender.start();
        logger.addAppender(appender);
        logger.setLevel(Level.TRACE);
    }

    /** Every captured line: formatted message plus any stack trace. */
    public List<String> lines() {
        return appender.list.stream()
                .map(e -> e.getLevel() + " " + e.getFormattedMessage()
                        + (e.getThrowableProxy() == null
                                ? ""
                                : "\n" + ThrowableProxyUtil.asString(e.getThrowableProxy())))
                .toList();
    }

    public String all() {
        return String.join("\n", lines());
    }

    @Override
    public void close() {
        logger.detachAppender(appender);
        logger.setLevel(previous);
        appender.stop();
    }
}
