package ai.chalk.compute.code;

import ai.chalk.compute.sandbox.ExecResult;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * The {@code jupyter} variant's commands: a Jupyter server offers no process API with exit codes, so each command is
 * started by the kernel itself, with {@code subprocess}, in a scope of its own (the snippets' variables are not
 * touched, nor the execution count). Its output comes back as the kernel's stream messages, as it is written, and its
 * exit code as a display of its own type. A command waits while a snippet runs, as the kernel does one thing at a
 * time; closing a running one interrupts the kernel, which kills the command.
 */
final class KernelCommands implements CodeCommands.Runner {

    static final String EXIT_TYPE = "application/vnd.chalk.command-exit+json";
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Run by {@code exec} with {@code ARGV} as its only global. */
    private static final String DRIVER = String.join(
            "\n",
            "import codecs, subprocess, sys, threading",
            "from IPython.display import display",
            "p = subprocess.Popen(ARGV, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)",
            "def pump(src, dst):",
            "    decode = codecs.getincrementaldecoder('utf-8')('replace').decode",
            "    for chunk in iter(lambda: src.read1(65536), b''):",
            "        dst.write(decode(chunk))",
            "        dst.flush()",
            "    dst.write(decode(b'', True))",
            "    dst.flush()",
            "try:",
            "    t = threading.Thread(target=pump, args=(p.stderr, sys.stderr))",
            "    t.start()",
            "    pump(p.stdout, sys.stdout)",
            "    t.join()",
            "    rc = p.wait()",
            "except BaseException:",
            "    p.kill()",
            "    p.wait()",
            "    raise",
            "display({'" + EXIT_TYPE + "': {'exit': rc}}, raw=True)",
            "");

    private final JupyterRunner kernel;

    KernelCommands(JupyterRunner kernel) {
        this.kernel = kernel;
    }

    @Override
    public ExecResult run(String commandLine) {
        try (CodeProcess process = exec(List.of("sh", "-c", commandLine))) {
            return process.collect();
        }
    }

    @Override
    public CodeProcess exec(List<String> argv) {
        String code;
        try {
            code = "exec(" + JSON.writeValueAsString(DRIVER) + ", {'ARGV': " + JSON.writeValueAsString(argv) + "})";
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
        java.util.concurrent.atomic.AtomicBoolean finished = new java.util.concurrent.atomic.AtomicBoolean();
        CodeProcess.Feed feed = CodeProcess.feed(() -> {
            if (!finished.get()) {
                kernel.interrupt(); // a KeyboardInterrupt in the driver, which kills the command
            }
        });
        LocalCommands.daemon("chalk-kernel-command", () -> {
            ExecutionResult result =
                    kernel.run(code, RunOptions.defaults(), Optional.empty(), false, (isErr, bytes) -> {
                        if (isErr) {
                            feed.stderr(bytes, bytes.length);
                        } else {
                            feed.stdout(bytes, bytes.length);
                        }
                    });
            finished.set(true);
            OptionalInt exit = OptionalInt.empty();
            for (Result r : result.results()) {
                Optional<byte[]> data = Optional.ofNullable(r.data().get(EXIT_TYPE));
                if (data.isPresent()) {
                    try {
                        exit = OptionalInt.of(JSON.readTree(new String(data.get(), StandardCharsets.UTF_8))
                                .path("exit")
                                .asInt());
                    } catch (java.io.IOException e) {
                        // not ours
                    }
                }
            }
            if (exit.isPresent() && exit.getAsInt() < 0) {
                // subprocess reports a signal as minus its number
                feed.exited(OptionalInt.empty(), OptionalInt.of(-exit.getAsInt()));
            } else if (exit.isPresent()) {
                feed.exited(exit, OptionalInt.empty());
            } else {
                String why = result.codeError()
                        .map(e -> e.name() + ": " + e.value())
                        .or(result::executionError)
                        .orElse("no exit code came back");
                byte[] message = ("the command did not finish: " + why + "\n").getBytes(StandardCharsets.UTF_8);
                feed.stderr(message, message.length);
                feed.exited(OptionalInt.empty(), OptionalInt.of(9));
            }
        });
        return feed.process();
    }
}
