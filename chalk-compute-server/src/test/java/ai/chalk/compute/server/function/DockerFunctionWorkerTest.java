package ai.chalk.compute.server.function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.container.v1.ResourceLimits;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CallExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersionKey;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.FunctionConfig;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ListExternalFunctionsRequest;
import ai.chalk.compute.proto.runtime.v1.CallFunctionRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupResponse;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingSpec;
import ai.chalk.compute.server.DockerRuntimeOptions;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.runtime.docker.DockerRuntime;
import ai.chalk.compute.server.runtime.docker.DockerTesting;
import ai.chalk.compute.server.worker.WorkerReplica;
import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Function workers on the docker runtime: each replica is a container of the JRE test image
 * ({@code ci/build-test-images.sh jre}) running its own {@code java} with {@link TestFunctionWorker} from the
 * uploaded code bound read-only at {@code /chalk/code}, serving on a Unix socket in the bound run directory. Real
 * engine, real containers, real worker JVMs; containers are killed with the docker CLI, as an operator (or the
 * OOM killer) would.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("alone")
class DockerFunctionWorkerTest {

    private static final String FUNCTIONS = "echo=t.W#echo,slow=t.W#slow,probe=t.W#probe";

    @TempDir
    static Path dir;

    private RunningServer server;
    private String jre;

    @BeforeAll
    void start() throws Exception {
        jre = DockerTesting.jreImage();
        server = RunningServer.start(
                dir.resolve("server"),
                b -> b.runtime(DockerRuntimeOptions.builder()
                                .defaultImage(DockerTesting.image())
                                .workerImage(jre)
                                .build())
                        .workerReadyTimeout(Duration.ofSeconds(60)));
    }

    @AfterAll
    void stop() throws Exception {
        if (server != null) {
            server.close();
        }
    }

    private static ExternalFunctionCatalogServiceGrpc.ExternalFunctionCatalogServiceBlockingStub catalog(
            RunningServer s) {
        return ExternalFunctionCatalogServiceGrpc.newBlockingStub(s.channel).withDeadlineAfter(90, TimeUnit.SECONDS);
    }

    private static CreateExternalFunctionVersionRequest request(String name, TestCode code, int min) {
        return CreateExternalFunctionVersionRequest.newBuilder()
                .setFunctionName(name)
                .setSpec(ScalingGroupSpec.newBuilder()
                        .setContainerSpec(ChalkContainerSpec.newBuilder().putEnvVars("GREETING", "hello"))
                        .setScalingSpec(ScalingSpec.newBuilder()
                                .setMinReplicas(min)
                                .setMaxReplicas(1)
                                .setShutdownDelaySeconds(60)))
                .setConfig(FunctionConfig.newBuilder()
                        .putOptions("chalk_compute.code", code.manifestDigest)
                        .putOptions("chalk_compute.functions", FUNCTIONS))
                .build();
    }

    private String call(String function, String name, String payload) {
        return catalog(server)
                .callExternalFunction(CallExternalFunctionRequest.newBuilder()
                        .setFunction(ExternalFunctionVersionKey.newBuilder().setFunctionName(function))
                        .setRemoteCallRequest(CallFunctionRequest.newBuilder()
                                .setName(name)
                                .setFeatherStream(ByteString.copyFromUtf8(payload)))
                        .build())
                .getRemoteCallResponse()
                .getFeatherStream()
                .toStringUtf8();
    }

    private ScalingGroupResponse group(String function) {
        return catalog(server)
                .getExternalFunction(GetExternalFunctionRequest.newBuilder()
                        .setFunctionName(function)
                        .setIncludeScalingGroup(true)
                        .build())
                .getScalingGroup();
    }

    /** The worker id in an echo answer ({@code label|worker id|payload}). */
    private static String worker(String answer) {
        return answer.split("\\|")[1];
    }

    /** The container of a worker (a replica's sandbox id is its worker id), or "" when there is none. */
    private static String container(String workerId) {
        DockerTesting.Result r = DockerTesting.docker(
                "ps", "-aq", "--no-trunc", "--filter", "label=" + DockerRuntime.LABEL_SANDBOX + "=" + workerId);
        assertThat(r.code()).as(r.output()).isZero();
        return r.output().trim();
    }

    @Test
    void callsAreAnsweredByTheImagesJavaInAContainer() throws Exception {
        TestCode code = new TestCode("jre");
        code.upload(server.channel);
        catalog(server).createExternalFunctionVersion(request("in-jre", code, 0));

        long t0 = System.nanoTime();
        String first = call("in-jre", "echo", "ping");
        long firstMillis = (System.nanoTime() - t0) / 1_000_000;
        assertThat(first).startsWith("jre|fnw-").endsWith("|ping");
        t0 = System.nanoTime();
        assertThat(call("in-jre", "echo", "again")).isEqualTo("jre|" + worker(first) + "|again");
        System.out.printf(
                "docker worker: first call (container + JVM start to SERVING, then the call) %d ms,"
                        + " next call %d ms%n",
                firstMillis, (System.nanoTime() - t0) / 1_000_000);

        String id = worker(first);
        String container = container(id);
        assertThat(container).as("the worker's container").isNotEmpty();
        DockerTesting.Result inspected = DockerTesting.docker(
                "inspect",
                "--format",
                "{{.Config.Image}}|{{range .Mounts}}{{.Destination}}:{{.RW}} {{end}}",
                container);
        assertThat(inspected.code()).as(inspected.output()).isZero();
        // the image's own java: nothing of the host's JDK is bound in, only the code (read-only), the run dir, the
        // directory of the server's socket for workers and the replica's identity (its rotating token), read-only,
        // besides the container's own terminals (ContainerTerminals)
        String[] imageAndMounts = inspected.output().trim().split("\\|");
        assertThat(imageAndMounts[0]).isEqualTo(jre);
        assertThat(java.util.Arrays.stream(imageAndMounts[1].split(" ")).map(m -> m.split(":")[0]))
                .containsExactlyInAnyOrder("/chalk/code", "/chalk/run", "/chalk/server", "/chalk/identity", "/dev/pts");
        // volumes are staged nosuid,nodev (and read-only) mounts on the host that the container binds, so the
        // engine lists them writable: what counts is how they are mounted inside
        DockerTesting.Result options = DockerTesting.docker(
                "exec", container, "awk", "$5 ~ /^\\/chalk\\// {print $5 \":\" $6}", "/proc/self/mountinfo");
        assertThat(options.output().lines().map(l -> l.split(",")[0]))
                .containsExactlyInAnyOrder("/chalk/code:ro", "/chalk/run:rw", "/chalk/server:ro", "/chalk/identity:ro");
        assertThat(options.output().lines()).allMatch(l -> l.contains("nosuid") && l.contains("nodev"));

        String probe = call("in-jre", "probe", "");
        System.out.println("docker worker probe: " + probe);
        assertThat(probe)
                .contains(
                        "code-read-only;GREETING=hello;id=" + id,
                        ";functions=" + FUNCTIONS,
                        ";java=/usr/lib/jvm/java-17-openjdk-",
                        ";server=reachable");

        // made by root in the container, the socket must still be connectable by a server running as another user
        Path socket = dir.resolve("server/functions/run").resolve(id).resolve("worker.sock");
        assertThat(Files.getPosixFilePermissions(socket))
                .contains(PosixFilePermission.OTHERS_WRITE, PosixFilePermission.GROUP_WRITE);

        // the run directory, the worker's working directory, is the server's data disk unless it has a limit: deployed
        // code writing there without end filled the disk every tenant's store and blobs are on
        DockerTesting.Result fill = DockerTesting.docker(
                "exec", container, "sh", "-c", "head -c 100000000 /dev/zero > /chalk/run/fill; echo exit=$?");
        assertThat(fill.output()).contains("No space left on device").doesNotContain("exit=0");
        assertThat(Files.size(socket.resolveSibling("fill")))
                .as("what the code wrote in its run directory")
                .isLessThanOrEqualTo(WorkerReplica.RUN_DIR_BYTES);
        assertThat(call("in-jre", "echo", "still")).isEqualTo("jre|" + id + "|still");
    }

    @Test
    void aKilledWorkerContainerIsReplacedBetweenCallsAndMidCall() throws Exception {
        TestCode code = new TestCode("kill");
        code.upload(server.channel);
        long t0 = System.nanoTime();
        catalog(server).createExternalFunctionVersion(request("killed", code, 1));
        await().atMost(Duration.ofSeconds(60))
                .pollInterval(Duration.ofMillis(50))
                .until(() -> group("killed").getReadyReplicas() == 1);
        System.out.printf(
                "docker worker: deploy to a SERVING replica (min_replicas 1) %d ms%n",
                (System.nanoTime() - t0) / 1_000_000);
        String a = worker(call("killed", "echo", "one"));

        // between calls: the pool notices the container's end and starts another replica (min_replicas 1)
        assertThat(DockerTesting.docker("kill", container(a)).code()).isZero();
        t0 = System.nanoTime();
        await().atMost(Duration.ofSeconds(60))
                .pollInterval(Duration.ofMillis(50))
                .until(() -> {
                    ScalingGroupResponse g = group("killed");
                    return g.getReadyReplicas() == 1 && container(a).isEmpty();
                });
        String b = worker(call("killed", "echo", "two"));
        System.out.printf(
                "docker worker: killed between calls, replaced and answering in %d ms%n",
                (System.nanoTime() - t0) / 1_000_000);
        assertThat(b).isNotEqualTo(a);

        // mid-call: the call fails as the protocol says, naming the worker and the call; the next is answered
        CompletableFuture<String> slow = CompletableFuture.supplyAsync(() -> call("killed", "slow", "30000"));
        await().atMost(Duration.ofSeconds(10))
                .pollInterval(Duration.ofMillis(20))
                .until(() -> group("killed").getAvailableReplicas() == 0); // the call is in flight
        assertThat(DockerTesting.docker("kill", container(b)).code()).isZero();
        assertThat(catchThrowable(() -> slow.get(20, TimeUnit.SECONDS)))
                .isInstanceOf(ExecutionException.class)
                .cause()
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
                    assertThat(e.getStatus().getDescription()).contains("worker " + b + " exited", "during call");
                });
        String c = worker(call("killed", "echo", "three"));
        assertThat(c).isNotIn(a, b);
        assertThat(container(b)).as("the killed worker's container is removed").isEmpty();
    }

    @Test
    void aFunctionsOwnImageWithJavaIsItsWorkersImageWithItsLimits() throws Exception {
        // what a function's Image builds to: the JRE image plus the function's own files
        String own = "chalk-compute-test/function-image:marker";
        Path context = Files.createDirectories(dir.resolve("own-image"));
        Files.writeString(
                context.resolve("Dockerfile"),
                "FROM " + jre + "\n" + "RUN echo priced-by-its-own-image > /etc/chalk-function-image\n");
        DockerTesting.Result built = DockerTesting.docker("build", "-q", "-t", own, context.toString());
        assertThat(built.code()).as(built.output()).isZero();

        TestCode code = new TestCode("own");
        code.upload(server.channel);
        var withImage = request("own-image", code, 0).toBuilder();
        withImage
                .getSpecBuilder()
                .getContainerSpecBuilder()
                .setImage(own)
                .setResources(ResourceLimits.newBuilder().setCpu("500m").setMemory("384Mi"));
        catalog(server).createExternalFunctionVersion(withImage.build());
        String probe = call("own-image", "probe", "");
        assertThat(probe).contains(";image=priced-by-its-own-image", ";server=reachable");
        String container = container(worker(call("own-image", "echo", "x")));
        DockerTesting.Result inspected = DockerTesting.docker(
                "inspect", "--format", "{{.Config.Image}} {{.HostConfig.Memory}} {{.HostConfig.NanoCpus}}", container);
        assertThat(inspected.output().trim()).isEqualTo(own + " " + (384L << 20) + " 500000000");

        var noJava = request("own-image-no-java", code, 0).toBuilder();
        noJava.getSpecBuilder().getContainerSpecBuilder().setImage(DockerTesting.image());
        assertThatThrownBy(() -> catalog(server).createExternalFunctionVersion(noJava.build()))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
                    assertThat(e.getStatus().getDescription())
                            .startsWith("spec.container_spec.image: ")
                            .contains("\"" + DockerTesting.image() + "\" has no java on its PATH");
                });
    }

    @Test
    void deploymentsAreRefusedWhileTheWorkerImageIsMissingOrHasNoJava() throws Exception {
        TestCode code = new TestCode("refused");
        String absent = "chalk-compute-test/absent-jre:never";
        try (RunningServer s = RunningServer.start(
                dir.resolve("absent"),
                b -> b.runtime(DockerRuntimeOptions.builder()
                        .defaultImage(DockerTesting.image())
                        .workerImage(absent)
                        .build()))) {
            code.upload(s.channel);
            long t0 = System.nanoTime();
            assertThatThrownBy(() -> catalog(s).createExternalFunctionVersion(request("refused", code, 1)))
                    .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
                        assertThat(e.getStatus().getDescription())
                                .contains(
                                        "the worker image \"" + absent + "\"",
                                        "is not on the Docker engine",
                                        "ci/build-test-images.sh jre",
                                        "--worker-image");
                    });
            assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(30));
            assertThat(catalog(s)
                            .listExternalFunctions(ListExternalFunctionsRequest.getDefaultInstance())
                            .getFunctionsCount())
                    .as("nothing was deployed")
                    .isZero();
        }
        String busybox = DockerTesting.image();
        try (RunningServer s = RunningServer.start(
                dir.resolve("nojava"),
                b -> b.runtime(DockerRuntimeOptions.builder()
                        .defaultImage(busybox)
                        .workerImage(busybox)
                        .build()))) {
            code.upload(s.channel);
            assertThatThrownBy(() -> catalog(s).createExternalFunctionVersion(request("refused", code, 1)))
                    .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
                        assertThat(e.getStatus().getDescription())
                                .contains(
                                        "the worker image \"" + busybox + "\" has no java on its PATH",
                                        "ci/build-test-images.sh jre",
                                        "--worker-image");
                    });
            DockerTesting.Result left = DockerTesting.docker("ps", "-aq", "--filter", "name=chalk-fnw-check-");
            assertThat(left.output().trim())
                    .as("the checks' containers are removed")
                    .isEmpty();
        }
    }
}
