package ai.chalk.compute.function.worker;

import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Logback's default in a worker whose class path has no logging configuration. A Spring Boot application's code has
 * Logback but rarely a {@code logback.xml} (Spring configures Logback itself, which a worker does not run), and then
 * Logback logs everything at DEBUG: gRPC's transport hex-dumps every HTTP/2 frame of every call, and the server keeps
 * and relays each line. Such a worker logs at INFO, Spring Boot's default; a configuration of the code's own (a
 * {@code logback.xml}, {@code logback-test.xml}, {@code -Dlogback.configurationFile} or a configurator service) is left
 * as it is. Logback is optional for the SDK, so it is reached by reflection.
 */
final class UnconfiguredLogback {

    private static final List<String> CONFIGURATIONS =
            List.of("logback-test.xml", "logback.xml", "META-INF/services/ch.qos.logback.classic.spi.Configurator");

    private UnconfiguredLogback() {}

    /**
     * Sets the root logger to INFO when the binding is Logback and {@code resources} hold none of its configurations.
     *
     * @return whether it did
     */
    static boolean quietDefaults(ClassLoader resources) {
        Object factory = LoggerFactory.getILoggerFactory();
        if (!factory.getClass().getName().equals("ch.qos.logback.classic.LoggerContext")
                || System.getProperty("logback.configurationFile") != null
                || CONFIGURATIONS.stream().anyMatch(name -> resources.getResource(name) != null)) {
            return false;
        }
        Logger root = LoggerFactory.getLogger(Logger.ROOT_LOGGER_NAME);
        try {
            Class<?> level = Class.forName(
                    "ch.qos.logback.classic.Level", true, factory.getClass().getClassLoader());
            root.getClass()
                    .getMethod("setLevel", level)
                    .invoke(root, level.getField("INFO").get(null));
            return true;
        } catch (ReflectiveOperationException e) {
            return false; // a Logback without these members: its own default stands
        }
    }
}
