package ai.chalk.compute;

import java.lang.reflect.Method;
import java.util.Locale;
import java.util.Objects;
import java.util.logging.ConsoleHandler;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.SimpleFormatter;
import org.slf4j.LoggerFactory;

/**
 * Settings of the SDK as a whole, for plain Java programs. A Spring application keeps configuring its logging with
 * {@code logging.level.ai.chalk.compute=DEBUG}.
 */
public final class ChalkCompute {

    /** The logger every SDK logger is under. */
    public static final String LOGGER_NAME = "ai.chalk.compute";

    private static final String APPENDER_NAME = "chalk-compute-console";
    private static final String PATTERN = "%level %logger: %msg%n";
    private static java.util.logging.Logger julLogger; // JUL holds its loggers weakly: keep the one configured
    private static Handler julHandler;

    private ChalkCompute() {}

    /**
     * Where {@link #configureLogging(String)} sent the SDK's log records.
     *
     * <ul>
     *   <li>{@code LOGBACK}, {@code JAVA_UTIL_LOGGING}: the SLF4J binding of the program; configured.
     *   <li>{@code NONE}: the program has no SLF4J binding, so SLF4J drops every record (it says so once at startup);
     *       nothing can be shown until one is added, such as {@code ch.qos.logback:logback-classic} or
     *       {@code org.slf4j:slf4j-jdk14}. Deployment progress and failures reported at exit are written to stderr
     *       all the same: they do not go through logging.
     *   <li>{@code OTHER}: another binding (Log4j, ...), left as the program configured it: set the level of the
     *       {@value #LOGGER_NAME} logger there.
     * </ul>
     */
    public enum LoggingBackend {
        /** Logback. */
        LOGBACK,
        /** {@code java.util.logging}, through {@code slf4j-jdk14}. */
        JAVA_UTIL_LOGGING,
        /** No SLF4J binding. */
        NONE,
        /** A binding the SDK does not configure. */
        OTHER
    }

    /**
     * Shows the SDK's records at INFO and above on stderr: lifecycle events (deployments, versions reused, uploads)
     * and readiness changes. See {@link #configureLogging(String)}.
     *
     * @return where the records go
     */
    public static LoggingBackend configureLogging() {
        return configureLogging("INFO");
    }

    /**
     * Shows the SDK's log records ({@value #LOGGER_NAME} and below) from {@code level} up on stderr, one line each
     * ({@code INFO ai.chalk.compute.function.deploy.FunctionDeployer: sum: deployed version 1}), and no longer
     * passes them to the program's root logger, so that they are not printed twice. Only the SDK's logger is
     * touched; the rest of the program's logging stays as it was. Calling it again replaces what the previous call
     * set up. It works with the program's SLF4J binding, Logback or {@code java.util.logging}; with no binding there
     * is nothing to configure (see {@link LoggingBackend#NONE}).
     *
     * @param level {@code TRACE}, {@code DEBUG} (every readiness poll and transport retry), {@code INFO},
     *              {@code WARN} (or {@code WARNING}) or {@code ERROR}, in any case
     * @return where the records go
     * @throws IllegalArgumentException when the level is none of those
     */
    public static synchronized LoggingBackend configureLogging(String level) {
        String normalized = Objects.requireNonNull(level, "level").trim().toUpperCase(Locale.ROOT);
        if (normalized.equals("WARNING")) {
            normalized = "WARN";
        }
        if (!java.util.List.of("TRACE", "DEBUG", "INFO", "WARN", "ERROR").contains(normalized)) {
            throw new IllegalArgumentException(
                    "unknown log level \"" + level + "\": use TRACE, DEBUG, INFO, WARN or ERROR");
        }
        Object factory = LoggerFactory.getILoggerFactory();
        String binding = factory.getClass().getName();
        if (binding.equals("ch.qos.logback.classic.LoggerContext")) {
            logback(factory, normalized);
            return LoggingBackend.LOGBACK;
        }
        if (binding.equals("org.slf4j.jul.JDK14LoggerFactory")) {
            javaUtilLogging(normalized);
            return LoggingBackend.JAVA_UTIL_LOGGING;
        }
        if (binding.startsWith("org.slf4j.helpers.")) {
            return LoggingBackend.NONE;
        }
        return LoggingBackend.OTHER;
    }

    /** Logback is optional, so it is driven by reflection: a console appender on stderr for the SDK's logger alone. */
    private static void logback(Object context, String level) {
        try {
            ClassLoader loader = context.getClass().getClassLoader();
            Class<?> contextClass = Class.forName("ch.qos.logback.core.Context", true, loader);
            Class<?> levelClass = Class.forName("ch.qos.logback.classic.Level", true, loader);
            Class<?> appenderInterface = Class.forName("ch.qos.logback.core.Appender", true, loader);
            Class<?> encoderInterface = Class.forName("ch.qos.logback.core.encoder.Encoder", true, loader);
            Object logger =
                    context.getClass().getMethod("getLogger", String.class).invoke(context, LOGGER_NAME);

            Object encoder = Class.forName("ch.qos.logback.classic.encoder.PatternLayoutEncoder", true, loader)
                    .getConstructor()
                    .newInstance();
            call(encoder, "setContext", contextClass, context);
            call(encoder, "setPattern", String.class, PATTERN);
            encoder.getClass().getMethod("start").invoke(encoder);

            Object appender = Class.forName("ch.qos.logback.core.ConsoleAppender", true, loader)
                    .getConstructor()
                    .newInstance();
            call(appender, "setContext", contextClass, context);
            call(appender, "setName", String.class, APPENDER_NAME);
            call(appender, "setTarget", String.class, "System.err");
            call(appender, "setEncoder", encoderInterface, encoder);
            appender.getClass().getMethod("start").invoke(appender);

            Object previous =
                    logger.getClass().getMethod("getAppender", String.class).invoke(logger, APPENDER_NAME);
            if (previous != null) {
                logger.getClass().getMethod("detachAppender", String.class).invoke(logger, APPENDER_NAME);
                previous.getClass().getMethod("stop").invoke(previous);
            }
            call(logger, "addAppender", appenderInterface, appender);
            call(logger, "setAdditive", boolean.class, false);
            call(
                    logger,
                    "setLevel",
                    levelClass,
                    levelClass.getMethod("toLevel", String.class).invoke(null, level));
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("could not configure Logback for " + LOGGER_NAME + ": " + e, e);
        }
    }

    private static void call(Object target, String method, Class<?> parameter, Object argument)
            throws ReflectiveOperationException {
        Method m = target.getClass().getMethod(method, parameter);
        m.invoke(target, argument);
    }

    private static void javaUtilLogging(String level) {
        Level julLevel = switch (level) {
            case "TRACE" -> Level.FINEST;
            case "DEBUG" -> Level.FINE;
            case "INFO" -> Level.INFO;
            case "WARN" -> Level.WARNING;
            default -> Level.SEVERE;
        };
        java.util.logging.Logger logger = java.util.logging.Logger.getLogger(LOGGER_NAME);
        if (julHandler != null) {
            logger.removeHandler(julHandler);
        }
        ConsoleHandler handler = new ConsoleHandler(); // stderr
        handler.setLevel(julLevel);
        handler.setFormatter(new SimpleFormatter() {
            @Override
            public String format(LogRecord record) {
                return record.getLevel().getName() + " " + record.getLoggerName() + ": " + formatMessage(record)
                        + System.lineSeparator();
            }
        });
        logger.addHandler(handler);
        logger.setLevel(julLevel);
        logger.setUseParentHandlers(false);
        julLogger = logger;
        julHandler = handler;
    }
}
