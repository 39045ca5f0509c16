package ai.chalk.compute.code;

import ai.chalk.compute.sandbox.ExecResult;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.function.BiConsumer;

/**
 * The {@code eval} variant's commands: processes of this machine, in the working directory, with the sandbox's
 * environment variables on top of this process's. Their output is read by two threads per process and handed on as
 * the reader takes it.
 */
final class LocalCommands implements CodeCommands.Runner {

    private final Path workdir;
    private final Map<String, String> env;

    LocalCommands(Path workdir, Map<String, String> env) {
        this.workdir = workdir;
        this.env = env;
    }

    @Override
    public ExecResult run(String commandLine) {
        try (CodeProcess process = exec(List.of("sh", "-c", commandLine))) {
            return process.collect();
        }
    }

    @Override
    public CodeProcess exec(List<String> argv) {
        ProcessBuilder builder = new ProcessBuilder(argv).directory(workdir.toFile());
        builder.environment().putAll(env);
        Process process;
        try {
            process = builder.start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + argv.get(0) + " in " + workdir + ": " + e.getMessage(), e);
        }
        CodeProcess.Feed feed = CodeProcess.feed(() -> {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
        });
        try {
            process.getOutputStream().close(); // no stdin: a program that reads it sees its end
        } catch (IOException e) {
            // it exited already
        }
        Thread out = pump(process.getInputStream(), feed::stdout, argv.get(0) + "-stdout");
        Thread err = pump(process.getErrorStream(), feed::stderr, argv.get(0) + "-stderr");
        daemon("chalk-eval-wait", () -> {
            try {
                int code = process.waitFor();
                out.join();
                err.join();
                feed.exited(OptionalInt.of(code), OptionalInt.empty());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        return feed.process();
    }

    static Thread daemon(String name, Runnable body) {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    private static Thread pump(InputStream in, BiConsumer<byte[], Integer> sink, String name) {
        return daemon("chalk-eval-" + name, () -> {
            byte[] buffer = new byte[8192];
            try (in) {
                int n;
                while ((n = in.read(buffer)) > 0) {
                    sink.accept(buffer, n);
                }
            } catch (IOException e) {
                // the process was stopped: its pipe is closed
            }
        });
    }
}
