package ai.chalk.compute.server.runtime.network;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/** Real network namespaces for the network tests, and commands run in them as a sandbox would run them. */
public final class NetnsTesting implements AutoCloseable {

    /** What a sandbox runs as: no capabilities (uid 65534 here; {@link #asRoot} for uid 0 without any). */
    static final List<String> NOBODY = List.of(
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--bounding-set=-all",
            "--inh-caps=-all",
            "--no-new-privs",
            "--");

    static final List<String> ROOT_WITHOUT_CAPS =
            List.of("setpriv", "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs", "--");

    private final List<Process> started = new ArrayList<>();

    /** How a command ended. */
    record Result(int exitCode, String output, long millis) {}

    /**
     * "The internet": a network namespace of the test's own behind a veth pair, with a TCP service at
     * {@code farEnd:port} that says {@code hello from the internet}. The host's end of the link, {@code hostEnd}, is an
     * address of the host like any other.
     */
    public record Internet(String hostEnd, String farEnd, int port) {}

    public Internet internet() throws Exception {
        Process holder = namespace();
        int x = ThreadLocalRandom.current().nextInt(1, 250);
        String tag = Integer.toHexString(ThreadLocalRandom.current().nextInt(0x100000, 0xffffff));
        Internet net = new Internet("198.18." + x + ".1", "198.18." + x + ".2", 8080);
        ok(List.of(
                "ip",
                "link",
                "add",
                "chk" + tag,
                "type",
                "veth",
                "peer",
                "name",
                "chkp" + tag,
                "netns",
                Long.toString(holder.pid())));
        ok(List.of("ip", "addr", "add", net.hostEnd() + "/30", "dev", "chk" + tag));
        ok(List.of("ip", "link", "set", "chk" + tag, "up"));
        String ns = "--net=/proc/" + holder.pid() + "/ns/net";
        ok(List.of("nsenter", ns, "--", "ip", "addr", "add", net.farEnd() + "/30", "dev", "chkp" + tag));
        ok(List.of("nsenter", ns, "--", "ip", "link", "set", "chkp" + tag, "up"));
        Process web = start(List.of(
                "nsenter",
                ns,
                "--",
                "perl",
                "-MIO::Socket::INET",
                "-e",
                "$| = 1; my $s = IO::Socket::INET->new(LocalAddr => $ARGV[0], LocalPort => $ARGV[1], Listen => 5,"
                        + " ReuseAddr => 1) or die qq(listen: $!\\n); print qq(listening\\n);"
                        + " while (my $c = $s->accept) { print $c qq(hello from the internet\\n); close $c }",
                net.farEnd(),
                Integer.toString(net.port())));
        BufferedReader out = new BufferedReader(new InputStreamReader(web.getInputStream(), StandardCharsets.UTF_8));
        assertThat(out.readLine()).as("the internet's service").isEqualTo("listening");
        return net; // the veth pair goes with the namespace when close() ends its holder
    }

    /** A process in a new network namespace with nothing but {@code lo}, as a sandbox's init is. */
    public Process namespace() throws Exception {
        return namespace(List.of("--net"));
    }

    /** The same, owned by a user namespace of its own where the process is root (as with bubblewrap --unshare-user). */
    public Process namespaceInOwnUserNamespace() throws Exception {
        return namespace(List.of("--user", "--map-root-user", "--net"));
    }

    /**
     * A sandbox as bubblewrap starts one ({@code --unshare-net --unshare-pid --die-with-parent}); returns the host
     * pid of bubblewrap's child, the sandbox's init, which is not a child of this JVM.
     */
    public long bubblewrapSandbox() throws Exception {
        Process bwrap = start(List.of(
                "bwrap",
                "--unshare-net",
                "--unshare-pid",
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--proc",
                "/proc",
                "--die-with-parent",
                "sleep",
                "300"));
        String own = Files.readSymbolicLink(Path.of("/proc/self/ns/net")).toString();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (System.nanoTime() < deadline && bwrap.isAlive()) {
            for (ProcessHandle child : bwrap.toHandle().children().toList()) {
                try {
                    if (!Files.readSymbolicLink(Path.of("/proc", Long.toString(child.pid()), "ns", "net"))
                            .toString()
                            .equals(own)) {
                        return child.pid();
                    }
                } catch (IOException e) {
                    // not there yet
                }
            }
            Thread.sleep(2);
        }
        throw new AssertionError("bubblewrap did not start a sandbox in a new network namespace");
    }

    private Process namespace(List<String> unshare) throws Exception {
        List<String> c = new ArrayList<>(List.of("unshare"));
        c.addAll(unshare);
        c.addAll(List.of("--", "sleep", "300"));
        Process p = start(c);
        String own = Files.readSymbolicLink(Path.of("/proc/self/ns/net")).toString();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (System.nanoTime() < deadline) {
            try {
                if (!Files.readSymbolicLink(Path.of("/proc", Long.toString(p.pid()), "ns", "net"))
                        .toString()
                        .equals(own)) {
                    return p;
                }
            } catch (IOException e) {
                // not there yet
            }
            Thread.sleep(2);
        }
        throw new AssertionError("unshare --net did not enter a new network namespace");
    }

    public Process start(List<String> command) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(command)
                .directory(new File("/"))
                .redirectErrorStream(true)
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        Process p = pb.start();
        started.add(p);
        return p;
    }

    /** Runs {@code command} in {@code pid}'s network namespace (only that one: the host's files and tools). */
    static Result inside(long pid, List<String> as, String... command) throws Exception {
        List<String> c = new ArrayList<>(List.of("nsenter", "--net=/proc/" + pid + "/ns/net", "--"));
        c.addAll(as);
        c.addAll(List.of(command));
        return run(c);
    }

    /** A TCP connection from inside, by bash's {@code /dev/tcp}; prints the first line the server sends. */
    static Result connect(long pid, String host, int port) throws Exception {
        return inside(
                pid,
                NOBODY,
                "bash",
                "-c",
                "exec 3<>/dev/tcp/$0/$1 && echo connected && timeout 2 head -n1 <&3",
                host,
                Integer.toString(port));
    }

    static Result run(List<String> command) throws Exception {
        long t0 = System.nanoTime();
        ProcessBuilder pb = new ProcessBuilder(command)
                .directory(new File("/"))
                .redirectErrorStream(true)
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        Process p = pb.start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(command + " did not finish");
        }
        return new Result(
                p.exitValue(),
                new String(out, StandardCharsets.UTF_8).trim(),
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
    }

    public static void ok(List<String> command) throws Exception {
        Result r = run(command);
        assertThat(r.exitCode()).as("%s: %s", command, r.output()).isZero();
    }

    @Override
    public void close() throws Exception {
        for (Process p : started) {
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
        }
    }
}
