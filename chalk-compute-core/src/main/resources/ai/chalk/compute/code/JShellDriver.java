// The Chalk Compute JShell driver: one JShell state inside a sandbox, run with the sandbox's own JDK
// (java JShellDriver.java) and driven by the client over stdin and stdout, one line per message, payloads in base64:
//   in:  RUN <code>          STOP
//   out: READY <version>     OUT <text>   ERR <text>   VAL <text>   EXC <name> <value> <trace>   DONE <status>
// It runs as the sandbox's code: the client trusts none of it and bounds what it reads.
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.stream.Collectors;
import jdk.jshell.Diag;
import jdk.jshell.EvalException;
import jdk.jshell.JShell;
import jdk.jshell.Snippet;
import jdk.jshell.SnippetEvent;
import jdk.jshell.SourceCodeAnalysis;
import jdk.jshell.UnresolvedReferenceException;

public class JShellDriver {

    static final PrintStream PROTOCOL = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);

    static synchronized void send(String kind, String... parts) {
        StringBuilder line = new StringBuilder(kind);
        for (String part : parts) {
            line.append(' ').append(Base64.getEncoder().encodeToString(part.getBytes(StandardCharsets.UTF_8)));
        }
        PROTOCOL.println(line);
    }

    /** What a snippet prints: sent on each line break and flush. */
    static final class Capture extends OutputStream {
        final String kind;
        final java.io.ByteArrayOutputStream pending = new java.io.ByteArrayOutputStream();

        Capture(String kind) {
            this.kind = kind;
        }

        @Override
        public synchronized void write(int b) {
            pending.write(b);
            if (b == '\n' || pending.size() >= 8192) {
                flush();
            }
        }

        @Override
        public synchronized void write(byte[] b, int off, int len) {
            for (int i = 0; i < len; i++) {
                write(b[off + i]);
            }
        }

        @Override
        public synchronized void flush() {
            if (pending.size() > 0) {
                send(kind, pending.toString(StandardCharsets.UTF_8));
                pending.reset();
            }
        }
    }

    /** Whether a snippet runs now, and whether a STOP reached it (JShell reports a stopped snippet as if it ended). */
    static volatile boolean running;
    static volatile boolean stopped;

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new Capture("OUT"), true, StandardCharsets.UTF_8);
        PrintStream err = new PrintStream(new Capture("ERR"), true, StandardCharsets.UTF_8);
        System.setOut(out);
        System.setErr(err);
        JShell shell = JShell.builder().executionEngine("local").out(out).err(err).build();
        LinkedBlockingQueue<String> runs = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.equals("STOP")) {
                        if (running && !stopped) {
                            stopped = true;
                            // a stop between two snippets of one run reaches nothing: keep stopping until the run ends
                            Thread stopper = new Thread(() -> {
                                while (running && stopped) {
                                    shell.stop();
                                    try {
                                        Thread.sleep(100);
                                    } catch (InterruptedException e) {
                                        return;
                                    }
                                }
                            });
                            stopper.setDaemon(true);
                            stopper.start();
                        }
                    } else if (line.startsWith("RUN ")) {
                        runs.add(new String(Base64.getDecoder().decode(line.substring(4)), StandardCharsets.UTF_8));
                    }
                }
            } catch (Exception e) {
                // the client went away
            }
            Runtime.getRuntime().halt(0);
        });
        reader.setDaemon(true);
        reader.start();
        send("READY", System.getProperty("java.version"));
        while (true) {
            run(shell, runs.take(), out, err);
        }
    }

    static void run(JShell shell, String code, PrintStream out, PrintStream err) {
        SourceCodeAnalysis analysis = shell.sourceCodeAnalysis();
        String remaining = code;
        String value = null;
        String status = "ok";
        stopped = false;
        running = true;
        try {
            while (!remaining.isBlank()) {
                SourceCodeAnalysis.CompletionInfo info = analysis.analyzeCompletion(remaining);
                String source = info.completeness().isComplete() ? info.source() : remaining;
                remaining = info.completeness().isComplete() ? info.remaining() : "";
                value = null;
                List<SnippetEvent> events = shell.eval(source);
                if (stopped) {
                    send("EXC", "Interrupted", "the snippet was stopped", "Interrupted: the snippet was stopped");
                    status = "interrupted";
                    return;
                }
                for (SnippetEvent event : events) {
                    if (event.causeSnippet() != null) {
                        continue;
                    }
                    if (event.status() == Snippet.Status.REJECTED) {
                        List<Diag> diags = shell.diagnostics(event.snippet()).collect(Collectors.toList());
                        String message = diags.stream()
                                .map(d -> d.getMessage(null))
                                .collect(Collectors.joining("\n"));
                        send("EXC", "CompilationError", message, source.strip() + "\n" + message);
                        status = "error";
                        return;
                    }
                    if (event.exception() != null) {
                        Exception e = event.exception();
                        String name = e instanceof EvalException ee
                                ? ee.getExceptionClassName()
                                : e instanceof UnresolvedReferenceException ? "UnresolvedReference" : e.getClass().getName();
                        java.io.StringWriter trace = new java.io.StringWriter();
                        e.printStackTrace(new java.io.PrintWriter(trace));
                        String message = e.getMessage() == null ? "" : e.getMessage();
                        boolean stopped = name.equals("jdk.jshell.spi.ExecutionControl$StoppedException")
                                || e.getClass().getSimpleName().equals("StoppedException");
                        send("EXC", stopped ? "Interrupted" : name, message, trace.toString().replace(e.getClass().getName(), name));
                        status = stopped ? "interrupted" : "error";
                        return;
                    }
                    Snippet.SubKind kind = event.snippet().subKind();
                    if (event.value() != null && (kind.kind() == Snippet.Kind.EXPRESSION
                            || kind == Snippet.SubKind.TEMP_VAR_EXPRESSION_SUBKIND)) {
                        value = event.value();
                    }
                }
            }
            if (value != null) {
                send("VAL", value);
            }
        } finally {
            running = false;
            out.flush();
            err.flush();
            send("DONE", status);
        }
    }
}
