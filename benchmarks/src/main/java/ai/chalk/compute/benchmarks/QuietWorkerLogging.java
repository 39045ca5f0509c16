package ai.chalk.compute.benchmarks;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.Configurator;
import ch.qos.logback.core.spi.ContextAwareBase;

/**
 * Keeps gRPC's and Netty's loggers at INFO in every JVM that runs the suite's class path, found by logback as a
 * service before its configuration files. The function workers the benchmarks deploy run a snapshot of this class
 * path without its test directories, so logback found no configuration there and logged at DEBUG: every HTTP/2 frame
 * of every call, hex-dumped, written to the worker's output and relayed line by line by the server, which made the
 * figures measure logging as much as calls. Configuration files still apply after this (the suite's own JVM reads the
 * test class path's {@code logback-test.xml}).
 */
public final class QuietWorkerLogging extends ContextAwareBase implements Configurator {

    @Override
    public ExecutionStatus configure(LoggerContext context) {
        context.getLogger("io.grpc").setLevel(Level.INFO);
        context.getLogger("io.netty").setLevel(Level.INFO);
        return ExecutionStatus.INVOKE_NEXT_IF_ANY;
    }
}
