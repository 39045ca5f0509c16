package ai.chalk.compute.server.worker;

import ai.chalk.compute.proto.runtime.v1.CallFunctionRequest;
import ai.chalk.compute.proto.runtime.v1.CallFunctionResponse;
import ai.chalk.compute.proto.runtime.v1.RemoteCallServiceGrpc;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.auth.WorkloadTokens;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.exec.ReceivedMessages;
import ai.chalk.compute.server.runtime.ExitStatus;
import ai.chalk.compute.server.runtime.ProcessSpec;
import ai.chalk.compute.server.runtime.ProcessStartException;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.SandboxRuntime;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.host.BeneathRoot;
import ai.chalk.compute.server.runtime.host.LayerQuota;
import ai.chalk.compute.server.runtime.host.PinnedSocket;
import ai.chalk.compute.server.runtime.host.WhenServerDies;
import ai.chalk.compute.server.threads.EnvironmentShares;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ClientStreamTracer;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One replica of a function revision: a sandbox running the worker JVM, which serves the protocol's
 * {@code RemoteCallService} and health on a Unix socket in the replica's run directory.
 */
public final class WorkerReplica implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(WorkerReplica.class);

    /**
     * {@code CallFunction} as this side uses it: one request, then half-close. The worker sees the protocol's bidi
     * stream all the same; typed so, the request's headers, message and end of stream go out in one write.
     */
    private static final MethodDescriptor<CallFunctionRequest, CallFunctionResponse> CALL_ONE =
            RemoteCallServiceGrpc.getCallFunctionMethod().toBuilder()
                    .setType(MethodDescriptor.MethodType.SERVER_STREAMING)
                    .build();

    private final String id;
    private final RuntimeSandbox sandbox;
    /** Its place among its environment's sandboxes, given back when it stops. */
    private final EnvironmentShares.Place place;

    private final CompletableFuture<Void> stopped = new CompletableFuture<>();

    private final RuntimeProcess process;
    private final WorkerOutput output;
    private final ManagedChannel channel;
    private final Path runDir;
    /** The worker's socket, held by descriptor: its directory is the worker's to write (see {@link #awaitSocket}). */
    private final PinnedSocket socket;

    private final Optional<WorkloadTokens> tokens;
    /** Counts the answers being received against the environment's share of what replicas send the server. */
    private final ClientStreamTracer.Factory answers;

    private volatile StartPhases startPhases = new StartPhases(0, 0, 0, 0);
    private final AtomicInteger inFlight = new AtomicInteger();
    private volatile Instant idleSince = Instant.now();
    private final long servingSince = System.nanoTime();
    private volatile boolean closed;

    private WorkerReplica(
            String id,
            RuntimeSandbox sandbox,
            EnvironmentShares.Place place,
            RuntimeProcess process,
            WorkerOutput output,
            ManagedChannel channel,
            Path runDir,
            PinnedSocket socket,
            Optional<WorkloadTokens> tokens,
            ClientStreamTracer.Factory answers) {
        this.answers = answers;
        this.socket = socket;
        this.tokens = tokens;
        this.id = id;
        this.runDir = runDir;
        this.sandbox = sandbox;
        this.place = place;
        this.process = process;
        this.output = output;
        this.channel = channel;
    }

    /**
     * Starts a replica and returns once its worker reports SERVING. What the worker writes goes to the server's log
     * and to {@code logs}.
     *
     * @throws WorkerDiedException when the sandbox or worker does not start, or is not SERVING within the launch's
     *                             timeout; the message has the worker's last output
     */
    public static WorkerReplica start(
            String id,
            SandboxRuntime runtime,
            Function<String, EnvironmentShares.Place> places,
            WorkerJava serverWorkers,
            Path runRoot,
            WorkerLaunch launch,
            Executor executor,
            Optional<ServerAccess> server,
            FunctionLogs logs,
            ReceivedMessages answers)
            throws WorkerDiedException {
        long begun = System.nanoTime();
        // a function's own image (accepted only where workers run in images) replaces the server's worker image
        WorkerJava java = launch.image().isEmpty() ? serverWorkers : WorkerJava.image(launch.image());
        Path runDir = runRoot.resolve(id).toAbsolutePath();
        Map<String, String> env = new HashMap<>(launch.env());
        try {
            // the failure names the secret, integration or key that is missing, never a value
            for (Map.Entry<String, String> e : launch.secretEnv().get().entrySet()) {
                if (env.putIfAbsent(e.getKey(), e.getValue()) != null) {
                    throw new WorkerDiedException("worker " + id + " could not start: spec.container_spec.env_vars"
                            + " sets " + e.getKey() + ", which secret_refs sets too");
                }
            }
        } catch (RuntimeException e) {
            throw new WorkerDiedException("worker " + id + " could not start: " + e.getMessage());
        }
        RuntimeSandbox sandbox;
        EnvironmentShares.Place place;
        try {
            place = places.apply(launch.environment());
        } catch (ComputeException e) {
            throw new WorkerDiedException("worker " + id + " could not start: " + e.getMessage(), true);
        }
        boolean kept = false;
        RuntimeSandbox unowned = null; // started, and no replica ends it yet
        try {
            // the replica's calls to the server act in its function's environment, and only there
            Optional<Path> identity = server.map(s ->
                    s.tokens().issue(id, new Caller(launch.environment(), launch.workload(), Caller.Kind.WORKLOAD)));
            try {
                Files.createDirectories(runDir);
                limitRunDir(runDir);
                Files.setPosixFilePermissions(runDir, PosixFilePermissions.fromString("rwxrwxrwx"));
                // the function's network policy, as a sandbox's: its calls to the server go over the socket, not this
                sandbox = runtime.start(launch.network()
                        .get()
                        .applyTo(new SandboxSpec(
                                id,
                                java.image().orElse(""),
                                env,
                                WorkerLaunch.RUN_MOUNT,
                                launch.limits(),
                                false,
                                List.of(),
                                bindings(
                                        runtime,
                                        java,
                                        launch,
                                        runDir,
                                        server.map(ServerAccess::socketDir),
                                        identity))));
            } catch (IOException | RuntimeStartException e) {
                throw new WorkerDiedException(
                        "worker " + id + " could not start its sandbox: " + e.getMessage() + remedy(java));
            }
            unowned = sandbox;
            long sandboxStarted = System.nanoTime();
            WorkerOutput output = new WorkerOutput(id, launch.environment(), launch.functionNames(), logs);
            RuntimeProcess process;
            try {
                List<String> command = java.command(jvmArgs(launch, java));
                process = sandbox.exec(new ProcessSpec(
                        command.get(0),
                        command.subList(1, command.size()),
                        Optional.of(WorkerLaunch.RUN_MOUNT),
                        workerEnv(id, launch, server.isPresent()),
                        Optional.empty()));
            } catch (ProcessStartException | RuntimeException e) {
                throw new WorkerDiedException("worker " + id + " could not start " + java.describe()
                        + " in its sandbox: " + e.getMessage() + remedy(java));
            }
            long execed = System.nanoTime();
            try {
                process.stdin().close();
            } catch (IOException e) {
                // it exited already; the wait below says so
            }
            output.follow(process.stdout(), "stdout", executor);
            output.follow(process.stderr(), "stderr", executor);
            // directExecutor: the call's callbacks only complete a future, so they run on the channel's event loop
            // instead of costing a hand-off to another thread per message
            PinnedSocket socket = awaitSocket(id, runDir, process, output, launch.readyTimeout());
            long socketSeen = System.nanoTime();
            // no gRPC retries: the pool retries a call whose worker died (CallPolicy), and gRPC's own retry machinery
            // (a buffered copy of each call's messages and a substream per attempt) otherwise runs on every call
            // a reply may be as large as the largest request the server takes from its clients (33 MiB,
            // ComputeServer.MAX_MESSAGE_BYTES), not only gRPC's default 4 MiB; a larger one fails the call with
            // RESOURCE_EXHAUSTED naming both sizes
            var builder = Grpc.newChannelBuilder("unix://" + socket.address(), InsecureChannelCredentials.create())
                    .directExecutor()
                    .disableRetry()
                    .maxInboundMessageSize(33 << 20);
            if (builder instanceof NettyChannelBuilder netty) {
                // gRPC asks for TCP keep-alive on every connection, which a unix socket has not: Netty would warn about
                // it each time
                netty.withOption(ChannelOption.SO_KEEPALIVE, null);
            }
            ManagedChannel channel = builder.build();
            WorkerReplica replica = new WorkerReplica(
                    id,
                    sandbox,
                    place,
                    process,
                    output,
                    channel,
                    runDir,
                    socket,
                    server.map(ServerAccess::tokens),
                    answers.answersFromReplicasOf(launch.environment()));
            unowned = null; // the replica's to end now
            try {
                replica.awaitServing(launch.readyTimeout());
            } catch (WorkerDiedException | RuntimeException e) {
                replica.close();
                throw e;
            }
            long serving = System.nanoTime();
            replica.startPhases = new StartPhases(
                    (sandboxStarted - begun) / 1_000_000,
                    (execed - sandboxStarted) / 1_000_000,
                    (socketSeen - execed) / 1_000_000,
                    (serving - socketSeen) / 1_000_000);
            kept = true;
            return replica;
        } finally {
            if (!kept) {
                // however the start failed (an unchecked exception too: a full disk, a closed executor), its sandbox
                // ends and no replica holds the place or the identity (both give back once: a replica that closed
                // gave them already)
                if (unowned != null) {
                    unowned.terminate(Duration.ZERO);
                }
                place.close();
                server.ifPresent(s -> s.tokens().release(id));
                removeRunDir(runDir);
            }
        }
    }

    /**
     * The most a replica's run directory holds: its socket, and what deployed code writes in its working directory
     * there. Without a limit that directory was the data disk's (the store's, the blobs', often the host's), outside
     * the sandbox's layer quota, and a function writing without end filled it for every tenant.
     */
    public static final long RUN_DIR_BYTES = 64L << 20;

    private static final AtomicBoolean RUN_DIR_UNLIMITED_TOLD = new AtomicBoolean();

    /**
     * Gives {@code runDir} a file system of {@link #RUN_DIR_BYTES} of its own (a tmpfs, whose pages count against the
     * writer's memory cgroup, the replica's); a server that cannot mount (not root) says so once and goes on without.
     */
    private static void limitRunDir(Path runDir) {
        try {
            LayerQuota.mount(runDir, RUN_DIR_BYTES);
        } catch (IOException e) {
            if (RUN_DIR_UNLIMITED_TOLD.compareAndSet(false, true)) {
                log.warn(
                        "Function replicas' run directories have no size limit ({}): deployed code can fill the disk"
                                + " under {}",
                        e.getMessage(),
                        runDir.getParent());
            }
        }
    }

    /**
     * Removes the run directories a previous server process left under {@code runRoot} (killed before its replicas
     * stopped), each with its file system: none of their workers runs any more.
     */
    static void removeLeftovers(Path runRoot) {
        if (!Files.isDirectory(runRoot, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (var dirs = Files.list(runRoot)) {
            dirs.forEach(WorkerReplica::removeRunDir);
        } catch (IOException e) {
            log.warn("Cannot remove the run directories left under {}: {}", runRoot, e.toString());
        }
    }

    /**
     * What removes the run directories under {@code runRoot} when this server is killed outright (its replicas, in
     * sandboxes, die with it): each directory's file system is detached and the emptied directory removed at once,
     * where they stayed mounted, their pages held, until the next start. Null where the shell cannot start.
     */
    static @Nullable WhenServerDies removeWhenServerDies(Path runRoot) {
        try {
            // as root, on directories replicas could write in: nothing in them is followed or removed, only the
            // mount points themselves (a directory a worker filled where no file system of its own was mounted stays)
            return WhenServerDies.start("chalk-function-cleanup", """
                    for d in "$1"/*; do mountpoint -q "$d" && umount -l "$d"; rmdir "$d"; done 2>/dev/null; exit 0
                    """, List.of(runRoot.toString()));
        } catch (IOException e) {
            log.warn("A killed server's function run directories stay mounted until its next start: {}", e.toString());
            return null;
        }
    }

    /** Detaches the run directory's file system (what the worker wrote goes with it) and removes what is left. */
    private static void removeRunDir(Path runDir) {
        LayerQuota.unmount(runDir);
        try (var files = Files.list(runDir)) {
            for (Path p : (Iterable<Path>) files::iterator) {
                Files.deleteIfExists(p);
            }
            Files.deleteIfExists(runDir);
        } catch (IOException e) {
            // gone already, or something the worker left behind where no quota held (a directory): kept, harmless,
            // named after this replica only
        }
    }

    private static List<SandboxSpec.VolumeBinding> bindings(
            SandboxRuntime runtime,
            WorkerJava java,
            WorkerLaunch launch,
            Path runDir,
            Optional<Path> serverSocketDir,
            Optional<Path> identity) {
        List<SandboxSpec.VolumeBinding> out = new ArrayList<>();
        out.add(new SandboxSpec.VolumeBinding(launch.code().dir(), WorkerLaunch.CODE_MOUNT, true));
        out.add(new SandboxSpec.VolumeBinding(runDir, WorkerLaunch.RUN_MOUNT, false));
        // read-only still lets the worker connect: a socket is not written through its file system
        serverSocketDir.ifPresent(dir -> out.add(new SandboxSpec.VolumeBinding(dir, WorkerLaunch.SERVER_MOUNT, true)));
        identity.ifPresent(dir -> out.add(new SandboxSpec.VolumeBinding(dir, WorkerLaunch.IDENTITY_MOUNT, true)));
        out.addAll(java.bindings(runtime));
        return out;
    }

    /** Whether this JVM, whose Java runs workers without an image, knows {@code -XX:TrimNativeHeapInterval}. */
    private static final boolean SERVER_JVM_TRIMS = knowsVmOption("TrimNativeHeapInterval");

    private static boolean knowsVmOption(String name) {
        try {
            java.lang.management.ManagementFactory.getPlatformMXBean(com.sun.management.HotSpotDiagnosticMXBean.class)
                    .getVMOption(name);
            return true;
        } catch (IllegalArgumentException | NullPointerException e) {
            return false; // not a HotSpot option here (an older JDK, or no HotSpot diagnostics at all)
        }
    }

    private static String remedy(WorkerJava java) {
        return java.remedy().isEmpty() ? "" : "; " + java.remedy();
    }

    private static List<String> jvmArgs(WorkerLaunch launch, WorkerJava java) {
        // full tiered compilation (C2): C1 alone (-XX:TieredStopAtLevel=1) reaches SERVING ~0.1 s sooner, but then
        // spends ~1.7x the CPU on every warm call (measured: ~45 vs ~26 µs per call of a small function)
        // a small initial heap: the JVM's default (1/64 of the host's memory, a third of it young) lets a plain
        // function's worker touch a young generation of ~100 MB before its first collection, all of it resident
        // afterwards; from 16 MB the heap grows only as far as the function's live data needs (the maximum is
        // unchanged). Measured by the benchmark suite's worker RSS figure (README, Benchmarks)
        // -XX:TrimNativeHeapInterval: the JIT compilers' arenas peak at ~25 MB while a worker starts and warms up;
        // freed, the C library keeps them resident unless trimmed (every 5 s, a few milliseconds each)
        // -XX:-UsePerfData: no hsperfdata file (a memory-mapped file in the sandbox's /tmp that nothing reads: the
        // sandbox's PID namespace hides the worker from jps/jstat on the host anyway)
        // Netty's pool chunks of 1 MiB instead of 4 MiB: each event-loop thread's arena takes whole chunks, and a
        // worker's messages are mostly small (a larger one is allocated outside the pool); measured by NMT in a
        // worker after the suite's calls, its direct memory went from 8.4 to 4.4 MB
        // Netty's machine id: Netty derives one for its channel ids from the network interfaces' hardware addresses;
        // a sandbox without network has none, so Netty warned and used random bytes. A random one per replica is
        // what it falls back to, without the search or the warning
        List<String> args = new ArrayList<>(List.of("-XX:+UseSerialGC", "-Xms16m", "-Xshare:auto", "-XX:-UsePerfData"));
        if (java.image().isEmpty() && SERVER_JVM_TRIMS) { // an image's Java may predate the flag (17.0.9)
            args.add("-XX:TrimNativeHeapInterval=5000");
        }
        args.addAll(List.of(
                "-Dio.grpc.netty.shaded.io.netty.allocator.maxOrder=7",
                "-Dio.grpc.netty.shaded.io.netty.machineId=" + randomMachineId(),
                "-cp",
                String.join(":", launch.code().classPath()),
                WorkerLaunch.MAIN_CLASS));
        return args;
    }

    /** A random, locally administered, unicast hardware address ({@code 02:xx:xx:xx:xx:xx}), as Netty parses one. */
    private static String randomMachineId() {
        byte[] mac = new byte[6];
        new java.security.SecureRandom().nextBytes(mac);
        mac[0] = (byte) ((mac[0] & 0xfc) | 0x02);
        java.util.StringJoiner out = new java.util.StringJoiner(":");
        for (byte b : mac) {
            out.add(String.format("%02x", b & 0xff));
        }
        return out.toString();
    }

    private static Map<String, String> workerEnv(String id, WorkerLaunch launch, boolean serverReachable) {
        Map<String, String> env = new HashMap<>();
        if (serverReachable) {
            // what SandboxClient.fromEnv() and the starter read: the function's clients reach this server
            env.put("CHALK_COMPUTE_TARGET", WorkerLaunch.SERVER_SOCKET);
            // the SDK re-reads it as the server rotates it (ChalkCredentials.ENV_TOKEN_FILE)
            env.put("CHALK_WEB_IDENTITY_TOKEN_FILE", WorkerLaunch.IDENTITY_MOUNT + "/" + WorkloadTokens.FILE_NAME);
        }
        env.put("CHALK_WORKER_SOCKET", WorkerLaunch.RUN_MOUNT + "/" + WorkerLaunch.WORKER_SOCKET_NAME);
        env.put("CHALK_WORKER_FUNCTIONS", launch.functions());
        env.put("CHALK_WORKER", launch.worker());
        env.put("CHALK_WORKER_ID", id);
        // when the server ran the worker, so that the worker's log can say how long the JVM took to reach main
        env.put("CHALK_WORKER_EXEC_MILLIS", Long.toString(System.currentTimeMillis()));
        if (launch.maxConcurrent() > 0) {
            env.put("CHALK_WORKER_MAX_CONCURRENT", Integer.toString(launch.maxConcurrent()));
        }
        return env;
    }

    /**
     * Waits for the worker to create its socket in the run directory and pins it. The worker's sandbox can write that
     * directory, so deployed code could otherwise swap the name for a link to another worker's socket, and the server
     * would send this function's calls, arguments and all, there; a link, or anything but a socket, is refused.
     */
    private static PinnedSocket awaitSocket(
            String id, Path runDir, RuntimeProcess process, WorkerOutput output, Duration timeout)
            throws WorkerDiedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        try (BeneathRoot dir = BeneathRoot.open(runDir, "the run directory of worker " + id)) {
            while (true) {
                try {
                    return dir.pinSocket(WorkerLaunch.WORKER_SOCKET_NAME);
                } catch (java.nio.file.NoSuchFileException e) {
                    if (process.onExit().isDone()) {
                        throw new WorkerDiedException("worker " + id + " exited ("
                                + describe(process.onExit().join()) + ") before it was serving; its last output:\n"
                                + output.tail());
                    }
                    if (System.nanoTime() > deadline) {
                        throw new WorkerDiedException("worker " + id + " did not open its socket within " + timeout
                                + "; its last output:\n" + output.tail());
                    }
                    java.util.concurrent.locks.LockSupport.parkNanos(5_000_000);
                }
            }
        } catch (java.io.IOException e) {
            throw new WorkerDiedException("worker " + id + " has no usable socket: " + e.getMessage());
        }
    }

    private void awaitServing(Duration timeout) throws WorkerDiedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        String last = "no answer yet";
        while (System.nanoTime() < deadline) {
            if (process.onExit().isDone()) {
                throw new WorkerDiedException(
                        "worker " + id + " exited (" + describe(process.onExit().join())
                                + ") before it was serving; its last output:\n" + output.tail());
            }
            try {
                HealthCheckResponse r = HealthGrpc.newBlockingStub(channel)
                        .withDeadlineAfter(1, TimeUnit.SECONDS)
                        .check(HealthCheckRequest.getDefaultInstance());
                if (r.getStatus() == HealthCheckResponse.ServingStatus.SERVING) {
                    return;
                }
                last = "health " + r.getStatus();
            } catch (StatusRuntimeException e) {
                last = e.getStatus().getCode()
                        + (e.getStatus().getDescription() == null
                                ? ""
                                : " " + e.getStatus().getDescription());
            }
            try {
                // short: the worker loads its functions after it binds its socket, and this wait is part of every
                // replica's start (a health check costs the worker a few microseconds)
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new WorkerDiedException("worker " + id + " start was interrupted");
            }
        }
        throw new WorkerDiedException("worker " + id + " was not serving within " + timeout.toSeconds()
                + " s (last health answer: " + last + "); its last output:\n" + output.tail());
    }

    static String describe(ExitStatus s) {
        return s.exitCode().isPresent()
                ? "exit code " + s.exitCode().getAsInt()
                : "signal " + s.signal().getAsInt();
    }

    public String id() {
        return id;
    }

    /**
     * Where a replica's start went, in milliseconds: its sandbox (secrets, network, namespaces), the worker's exec,
     * the JVM until it bound its socket, and from there until it reported SERVING (its functions loaded).
     */
    public record StartPhases(long sandboxMillis, long execMillis, long toSocketMillis, long toServingMillis) {
        @Override
        public String toString() {
            return "sandbox " + sandboxMillis + " ms, exec " + execMillis + " ms, JVM to socket " + toSocketMillis
                    + " ms, to SERVING " + toServingMillis + " ms";
        }
    }

    /** How long this replica's start took, phase by phase. */
    public StartPhases startPhases() {
        return startPhases;
    }

    /** Calls in flight on this replica. */
    public int inFlight() {
        return inFlight.get();
    }

    /** Whether the worker process still runs and the replica was not closed. */
    public boolean alive() {
        return !closed && !process.onExit().isDone();
    }

    /** Completes when the worker process exits. */
    public CompletableFuture<ExitStatus> onExit() {
        return process.onExit();
    }

    /** How long the worker has served. */
    public Duration age() {
        return Duration.ofNanos(System.nanoTime() - servingSince);
    }

    /** Since when no call has been in flight (only meaningful while {@link #inFlight()} is 0). */
    public Instant idleSince() {
        return idleSince;
    }

    /** Counts a call routed here; {@link #call} releases it. */
    void reserve() {
        inFlight.incrementAndGet();
    }

    /** Gives back a {@link #reserve() reservation} that will not be used. */
    void release() {
        if (inFlight.decrementAndGet() == 0) {
            idleSince = Instant.now();
        }
    }

    /**
     * Sends one call to the worker and waits for its answer. A call {@link #reserve() reserved} beforehand.
     *
     * @throws StatusRuntimeException the worker's own status and trailers (a user failure)
     * @throws WorkerDiedException    when the worker exited during the call
     */
    public CallFunctionResponse call(CallFunctionRequest request, String callId, Duration timeout)
            throws WorkerDiedException {
        CompletableFuture<CallFunctionResponse> answer = new CompletableFuture<>();
        send(request, callId, timeout, (response, failure) -> {
            if (failure == null) {
                answer.complete(response);
            } else {
                answer.completeExceptionally(failure);
            }
        });
        try {
            return answer.get();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof StatusRuntimeException sre) {
                throw diedOr(sre, callId);
            }
            throw new IllegalStateException(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw Status.CANCELLED
                    .withDescription("call " + callId + " was interrupted")
                    .asRuntimeException();
        }
    }

    /**
     * Sends one call to the worker without waiting: {@code outcome} gets the answer, or the call's failure status
     * (which {@link #diedOr} tells apart from the worker's death), on the channel's transport thread, so it must not
     * block. A call {@link #reserve() reserved} beforehand; the reservation is given back before {@code outcome} runs.
     * The call belongs to the current {@link io.grpc.Context}: cancelling that (the server call it serves) cancels it.
     */
    void send(
            CallFunctionRequest request,
            String callId,
            Duration timeout,
            BiConsumer<CallFunctionResponse, StatusRuntimeException> outcome) {
        AtomicBoolean ended = new AtomicBoolean(); // the reservation is given back once, whichever way the call ends
        try {
            ClientCall<CallFunctionRequest, CallFunctionResponse> call = channel.newCall(
                    CALL_ONE,
                    CallOptions.DEFAULT
                            .withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS)
                            .withStreamTracerFactory(answers));
            ClientCalls.asyncServerStreamingCall(call, request, new StreamObserver<>() {
                private CallFunctionResponse first;

                @Override
                public void onNext(CallFunctionResponse value) {
                    if (first == null) {
                        first = value;
                    } else {
                        // a call has one answer: more, each up to 33 MiB read and parsed on the channel's
                        // thread, only cost the server
                        call.cancel("worker " + id + " sent more than one answer to call " + callId, null);
                    }
                }

                @Override
                public void onError(Throwable t) {
                    ended(ended);
                    outcome.accept(
                            null,
                            t instanceof StatusRuntimeException sre
                                    ? sre
                                    : Status.fromThrowable(t).asRuntimeException(Status.trailersFromThrowable(t)));
                }

                @Override
                public void onCompleted() {
                    ended(ended);
                    if (first == null) {
                        outcome.accept(
                                null,
                                Status.INTERNAL
                                        .withDescription(
                                                "worker " + id + " ended call " + callId + " without an answer")
                                        .asRuntimeException());
                    } else {
                        outcome.accept(first, null);
                    }
                }
            });
        } catch (RuntimeException | Error e) {
            ended(ended);
            throw e;
        }
    }

    private void ended(AtomicBoolean ended) {
        if (ended.compareAndSet(false, true) && inFlight.decrementAndGet() == 0) {
            idleSince = Instant.now();
        }
    }

    /** A transport failure while the process exits means the worker died; anything else is the worker's answer. */
    StatusRuntimeException diedOr(StatusRuntimeException e, String callId) throws WorkerDiedException {
        Status.Code code = e.getStatus().getCode();
        if (code == Status.Code.UNAVAILABLE || code == Status.Code.INTERNAL || code == Status.Code.CANCELLED) {
            try {
                ExitStatus exit =
                        process.onExit().get(code == Status.Code.UNAVAILABLE ? 3000 : 300, TimeUnit.MILLISECONDS);
                throw new WorkerDiedException("worker " + id + " exited (" + describe(exit) + ") during call " + callId
                        + "; its last output:\n" + output.tail());
            } catch (TimeoutException | ExecutionException ignored) {
                // still running: the status is the worker's answer
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
            }
        }
        return e;
    }

    /** The worker's last output lines. */
    public String outputTail() {
        return output.tail();
    }

    /** Stops the worker and its sandbox, and removes its run directory. */
    @Override
    public void close() {
        try {
            stop();
        } finally {
            stopped.complete(null);
        }
    }

    /** Done once {@link #close} has stopped the replica and given back its place. */
    CompletableFuture<Void> stopped() {
        return stopped;
    }

    private void stop() {
        closed = true;
        try {
            channel.shutdownNow();
            socket.close();
            sandbox.terminate(Duration.ofSeconds(1));
        } finally {
            // whatever failed above, the place and the identity are this replica's no more
            place.close();
            tokens.ifPresent(t -> t.release(id));
        }
        removeRunDir(runDir);
    }
}
