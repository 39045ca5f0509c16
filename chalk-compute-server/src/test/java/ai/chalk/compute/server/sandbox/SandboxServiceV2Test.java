package ai.chalk.compute.server.sandbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.container.v1.ComputeClass;
import ai.chalk.compute.proto.container.v1.ContainerSecurityPolicy;
import ai.chalk.compute.proto.container.v1.HttpProbe;
import ai.chalk.compute.proto.container.v1.KernelPolicy;
import ai.chalk.compute.proto.container.v1.ManagedSshDestination;
import ai.chalk.compute.proto.container.v1.ReadinessProbe;
import ai.chalk.compute.proto.container.v1.ResourceLimits;
import ai.chalk.compute.proto.container.v1.RestartPolicy;
import ai.chalk.compute.proto.container.v1.SecretRef;
import ai.chalk.compute.proto.container.v1.StartupProbe;
import ai.chalk.compute.proto.sandbox.v1.ExecInit;
import ai.chalk.compute.proto.sandbox.v1.ExecRequest;
import ai.chalk.compute.proto.sandbox.v1.ExecResponse;
import ai.chalk.compute.proto.sandbox.v1.StdinEof;
import ai.chalk.compute.proto.sandbox.v2.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandResponse;
import ai.chalk.compute.proto.sandbox.v2.GetSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.ListSandboxesFilters;
import ai.chalk.compute.proto.sandbox.v2.ListSandboxesRequest;
import ai.chalk.compute.proto.sandbox.v2.ListSandboxesResponse;
import ai.chalk.compute.proto.sandbox.v2.NewProcess;
import ai.chalk.compute.proto.sandbox.v2.OpenSessionRequest;
import ai.chalk.compute.proto.sandbox.v2.OpenSessionResponse;
import ai.chalk.compute.proto.sandbox.v2.ResumeSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.SandboxInfo;
import ai.chalk.compute.proto.sandbox.v2.SandboxSortOrder;
import ai.chalk.compute.proto.sandbox.v2.SandboxStatus;
import ai.chalk.compute.proto.sandbox.v2.SuspendSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.TerminateSandboxRequest;
import ai.chalk.compute.server.EventCollector;
import ai.chalk.compute.server.RunningServer;
import com.google.protobuf.util.Durations;
import com.google.protobuf.util.Timestamps;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.UnaryOperator;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The v2 SandboxService over TCP through the generated stubs: create from a ChalkContainerSpec, get, list with
 * filters, sort and cursor, suspend and resume, terminate; one set of sandboxes shared with v1; spec fields the
 * local runtime cannot honour are refused by name.
 */
@Tag("alone")
class SandboxServiceV2Test extends RunningServer.PerTestClass {

    private static SandboxInfo create(ChalkContainerSpec spec) {
        return server.sandboxesV2()
                .createSandbox(CreateSandboxRequest.newBuilder().setSpec(spec).build())
                .getSandbox();
    }

    private static SandboxInfo get(String id) {
        return server.sandboxesV2()
                .getSandbox(GetSandboxRequest.newBuilder().setId(id).build())
                .getSandbox();
    }

    private static void terminate(String id) {
        server.sandboxesV2()
                .terminateSandbox(TerminateSandboxRequest.newBuilder()
                        .setId(id)
                        .setGracePeriod(Durations.fromMillis(500))
                        .build());
    }

    private static ExecCommandResponse sh(String id, String script) {
        return server.processes()
                .execCommand(ExecCommandRequest.newBuilder()
                        .setSandboxId(id)
                        .setCommand("sh")
                        .addArgs("-c")
                        .addArgs(script)
                        .build());
    }

    private static List<ExecResponse> execV1(String id, String script) throws Exception {
        EventCollector<ExecResponse> events = new EventCollector<>();
        StreamObserver<ExecRequest> requests = server.sandboxesAsync().exec(events);
        requests.onNext(ExecRequest.newBuilder()
                .setInit(ExecInit.newBuilder()
                        .setSandboxId(id)
                        .setCommand("sh")
                        .addArgs("-c")
                        .addArgs(script))
                .build());
        requests.onNext(ExecRequest.newBuilder()
                .setStdinEof(StdinEof.getDefaultInstance())
                .build());
        requests.onCompleted();
        return events.drain(Duration.ofSeconds(30));
    }

    private static List<String> ids(ListSandboxesResponse page) {
        return page.getSandboxesList().stream().map(SandboxInfo::getId).toList();
    }

    @Test
    void createGetTerminateWithTheSpecHonoured() {
        String name = "v2-" + UUID.randomUUID();
        ChalkContainerSpec spec = ChalkContainerSpec.newBuilder()
                .setName(name)
                .putEnvVars("GREETING", "hello")
                .putTags("team", "evals")
                .setResources(ResourceLimits.newBuilder().setCpu("500m").setMemory("256Mi"))
                .setLifetime(Durations.fromSeconds(600))
                .setRestartPolicy(RestartPolicy.RESTART_POLICY_NEVER)
                .setSecurityPolicy(
                        ContainerSecurityPolicy.newBuilder().setKernelPolicy(KernelPolicy.KERNEL_POLICY_OPEN))
                .build();
        SandboxInfo created = create(spec);
        assertThat(created.getStatus()).isEqualTo(SandboxStatus.SANDBOX_STATUS_RUNNING);
        assertThat(created.getName()).isEqualTo(name);
        assertThat(created.getSpec()).isEqualTo(spec);
        assertThat(Timestamps.toMillis(created.getCreatedAt()))
                .isCloseTo(System.currentTimeMillis(), org.assertj.core.data.Offset.offset(60_000L));
        assertThat(created.hasFinishedAt()).isFalse();

        ExecCommandResponse out = sh(
                created.getId(),
                "echo $GREETING; pwd; cat /sys/fs/cgroup/memory/memory.limit_in_bytes" + " 2>/dev/null || true");
        assertThat(out.getStdout().toStringUtf8()).startsWith("hello\n/workspace\n");

        assertThat(get(created.getId()).getSpec()).isEqualTo(spec);
        terminate(created.getId());
        SandboxInfo after = get(created.getId());
        assertThat(after.getStatus()).isEqualTo(SandboxStatus.SANDBOX_STATUS_TERMINATED);
        assertThat(after.getStatusMessage()).contains("requested by a client");
        assertThat(after.hasFinishedAt()).isTrue();
        terminate(created.getId()); // harmless twice
        expectStatus(() -> get("nope"), Status.Code.NOT_FOUND, "sandbox nope does not exist");
        expectStatus(() -> get(""), Status.Code.INVALID_ARGUMENT, "id is required");
        expectStatus(
                () -> server.sandboxesV2().createSandbox(CreateSandboxRequest.getDefaultInstance()),
                Status.Code.INVALID_ARGUMENT,
                "spec");
        // a spec is kept with the sandbox's record, an environment's 10,000 finished ones too: it has a bound
        ChalkContainerSpec.Builder huge = ChalkContainerSpec.newBuilder();
        for (int i = 0; i < 5; i++) {
            huge.addEntrypoint("x".repeat(120 << 10));
        }
        expectStatus(
                () -> create(huge.build()),
                Status.Code.INVALID_ARGUMENT,
                "the sandbox's spec (entrypoint, variables, volumes, policies) is 614");
        assertThat(get(create(ChalkContainerSpec.getDefaultInstance()).getId()).getStatus())
                .isEqualTo(SandboxStatus.SANDBOX_STATUS_RUNNING);
    }

    @Test
    void v1AndV2SeeTheSameSandboxes() throws Exception {
        String name = "both-" + UUID.randomUUID();
        SandboxInfo v2 = create(ChalkContainerSpec.newBuilder()
                .setName(name)
                .putEnvVars("FROM", "v2")
                .build());
        ai.chalk.compute.proto.sandbox.v1.SandboxInfo seenByV1 = server.sandboxes()
                .getSandbox(ai.chalk.compute.proto.sandbox.v1.GetSandboxRequest.newBuilder()
                        .setSandboxId(v2.getId())
                        .build())
                .getSandbox();
        assertThat(seenByV1.getState()).isEqualTo("RUNNING");
        assertThat(seenByV1.getName()).isEqualTo(name);
        List<ExecResponse> events = execV1(v2.getId(), "echo from $FROM");
        assertThat(events.stream()
                        .filter(ExecResponse::hasOutputData)
                        .map(e -> e.getOutputData().getData().toStringUtf8())
                        .reduce("", String::concat))
                .isEqualTo("from v2\n");

        ai.chalk.compute.proto.sandbox.v1.SandboxInfo v1 = server.sandboxes()
                .createSandbox(ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest.newBuilder()
                        .setName(name)
                        .putEnv("FROM", "v1")
                        .setResourceLimits(ai.chalk.compute.proto.sandbox.v1.ResourceLimits.newBuilder()
                                .setCpu("1"))
                        .build())
                .getSandbox();
        SandboxInfo seenByV2 = get(v1.getId());
        assertThat(seenByV2.getStatus()).isEqualTo(SandboxStatus.SANDBOX_STATUS_RUNNING);
        assertThat(seenByV2.getName()).isEqualTo(name);
        assertThat(seenByV2.getSpec().getEnvVarsMap()).containsEntry("FROM", "v1");
        assertThat(seenByV2.getSpec().getResources().getCpu()).isEqualTo("1");
        assertThat(sh(v1.getId(), "echo from $FROM").getStdout().toStringUtf8()).isEqualTo("from v1\n");

        List<String> listed = ids(server.sandboxesV2()
                .listSandboxes(ListSandboxesRequest.newBuilder()
                        .setFilters(ListSandboxesFilters.newBuilder().addNames(name))
                        .build()));
        assertThat(listed).containsExactly(v1.getId(), v2.getId()); // newest first by default

        // terminated through one API, finished in the other
        server.terminate(v2.getId());
        assertThat(get(v2.getId()).getStatus()).isEqualTo(SandboxStatus.SANDBOX_STATUS_TERMINATED);
        terminate(v1.getId());
        assertThat(server.sandboxes()
                        .getSandbox(ai.chalk.compute.proto.sandbox.v1.GetSandboxRequest.newBuilder()
                                .setSandboxId(v1.getId())
                                .setIncludeTerminated(true)
                                .build())
                        .getSandbox()
                        .getState())
                .isEqualTo("TERMINATED");
    }

    @Test
    void listFiltersByStatusNameAndSearchAndPagesWithACursorInBothOrders() {
        String name = "list-" + UUID.randomUUID();
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            ids.add(create(ChalkContainerSpec.newBuilder().setName(name).build())
                    .getId());
        }
        String other = create(
                        ChalkContainerSpec.newBuilder().setName(name + "-other").build())
                .getId();
        terminate(ids.get(0));
        ListSandboxesFilters byName =
                ListSandboxesFilters.newBuilder().addNames(name).build();

        for (SandboxSortOrder order : List.of(
                SandboxSortOrder.SANDBOX_SORT_ORDER_ASC,
                SandboxSortOrder.SANDBOX_SORT_ORDER_DESC,
                SandboxSortOrder.SANDBOX_SORT_ORDER_UNSPECIFIED)) {
            List<String> seen = new ArrayList<>();
            ListSandboxesRequest.Builder req = ListSandboxesRequest.newBuilder()
                    .setLimit(2)
                    .setFilters(byName)
                    .setSortOrder(order);
            int pages = 0;
            while (true) {
                ListSandboxesResponse page = server.sandboxesV2().listSandboxes(req.build());
                assertThat(page.getSandboxesCount()).isLessThanOrEqualTo(2);
                seen.addAll(ids(page));
                pages++;
                if (!page.hasNextCursor()) {
                    break;
                }
                req.setCursor(page.getNextCursor());
            }
            assertThat(pages).isEqualTo(3);
            List<String> expected = new ArrayList<>(ids);
            if (order != SandboxSortOrder.SANDBOX_SORT_ORDER_ASC) {
                java.util.Collections.reverse(expected);
            }
            assertThat(seen).as("order %s", order).containsExactlyElementsOf(expected);
        }

        List<String> running = ids(server.sandboxesV2()
                .listSandboxes(ListSandboxesRequest.newBuilder()
                        .setFilters(byName.toBuilder().addStatuses(SandboxStatus.SANDBOX_STATUS_RUNNING))
                        .build()));
        assertThat(running).containsExactlyInAnyOrderElementsOf(ids.subList(1, 5));
        List<String> terminated = ids(server.sandboxesV2()
                .listSandboxes(ListSandboxesRequest.newBuilder()
                        .setFilters(byName.toBuilder().addStatuses(SandboxStatus.SANDBOX_STATUS_TERMINATED))
                        .build()));
        assertThat(terminated).containsExactly(ids.get(0));
        List<String> never = ids(server.sandboxesV2()
                .listSandboxes(ListSandboxesRequest.newBuilder()
                        .setFilters(byName.toBuilder().addStatuses(SandboxStatus.SANDBOX_STATUS_SUCCEEDED))
                        .build()));
        assertThat(never).isEmpty();

        List<String> searched = ids(server.sandboxesV2()
                .listSandboxes(ListSandboxesRequest.newBuilder()
                        .setSearch(name.toUpperCase(java.util.Locale.ROOT))
                        .setLimit(1000)
                        .build()));
        assertThat(searched).containsExactlyInAnyOrderElementsOf(concat(ids, other));
        List<String> byId = ids(server.sandboxesV2()
                .listSandboxes(ListSandboxesRequest.newBuilder()
                        .setSearch(other.substring(0, 13))
                        .build()));
        assertThat(byId).contains(other);
        List<String> byImage = ids(server.sandboxesV2()
                .listSandboxes(ListSandboxesRequest.newBuilder()
                        .setFilters(byName.toBuilder().addImages(""))
                        .build()));
        assertThat(byImage).hasSize(5);
        assertThat(ids(server.sandboxesV2()
                        .listSandboxes(ListSandboxesRequest.newBuilder()
                                .setFilters(byName.toBuilder().addImages("ubuntu:latest"))
                                .build())))
                .isEmpty();
        assertThat(ids(server.sandboxesV2()
                        .listSandboxes(ListSandboxesRequest.newBuilder()
                                .setSearch("%")
                                .setFilters(byName)
                                .build())))
                .isEmpty(); // LIKE wildcards match literally

        expectStatus(
                () -> server.sandboxesV2()
                        .listSandboxes(
                                ListSandboxesRequest.newBuilder().setCursor("x").build()),
                Status.Code.INVALID_ARGUMENT,
                "cursor");
        expectStatus(
                () -> server.sandboxesV2()
                        .listSandboxes(
                                ListSandboxesRequest.newBuilder().setLimit(0).build()),
                Status.Code.INVALID_ARGUMENT,
                "limit");
        expectStatus(
                () -> server.sandboxesV2()
                        .listSandboxes(ListSandboxesRequest.newBuilder()
                                .setFilters(ListSandboxesFilters.newBuilder()
                                        .addStatuses(SandboxStatus.SANDBOX_STATUS_UNSPECIFIED))
                                .build()),
                Status.Code.INVALID_ARGUMENT,
                "filters.statuses");
        concat(ids.subList(1, 5), other).forEach(SandboxServiceV2Test::terminate);
    }

    private static List<String> concat(List<String> a, String b) {
        List<String> out = new ArrayList<>(a);
        out.add(b);
        return out;
    }

    @Test
    void suspendFreezesTheSandboxAndRefusesExecsUntilResumed() throws Exception {
        String id = create(ChalkContainerSpec.getDefaultInstance()).getId();
        sh(
                id,
                "setsid sh -c 'while :; do date +%s%N >> /workspace/t; sleep 0.05; done' > /dev/null 2>&1 < /dev/null &");
        // the server's own view of the file, from outside the sandbox: execs are refused while it is suspended
        Path t = dataDir.resolve("runtime/local/sandboxes").resolve(id).resolve("root/workspace/t");
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> Files.exists(t) && Files.size(t) > 60);

        server.sandboxesV2()
                .suspendSandbox(SuspendSandboxRequest.newBuilder().setId(id).build());
        long frozenAt = Files.size(t);
        Thread.sleep(500);
        assertThat(Files.size(t)).as("nothing writes while suspended").isEqualTo(frozenAt);

        SandboxInfo suspended = get(id);
        assertThat(suspended.getStatus()).isEqualTo(SandboxStatus.SANDBOX_STATUS_RUNNING);
        assertThat(suspended.getStatusMessage()).contains("suspended");
        assertThat(server.sandboxes()
                        .getSandbox(ai.chalk.compute.proto.sandbox.v1.GetSandboxRequest.newBuilder()
                                .setSandboxId(id)
                                .build())
                        .getSandbox()
                        .getState())
                .isEqualTo("SUSPENDED");
        expectStatus(() -> sh(id, "true"), Status.Code.FAILED_PRECONDITION, "is suspended");
        List<ExecResponse> v1 = execV1(id, "true");
        assertThat(v1.get(0).getError().getCode()).isEqualTo("FAILED_PRECONDITION");
        assertThat(v1.get(0).getError().getMessage()).contains("is suspended");
        EventCollector<OpenSessionResponse> session = new EventCollector<>();
        StreamObserver<OpenSessionRequest> requests = server.processesAsync().openSession(session);
        requests.onNext(OpenSessionRequest.newBuilder()
                .setNewProcess(NewProcess.newBuilder().setSandboxId(id).setCommand("true"))
                .build());
        requests.onCompleted();
        List<OpenSessionResponse> sessionEvents = session.drain(Duration.ofSeconds(10));
        assertThat(sessionEvents.get(0).getError().getMessage()).contains("is suspended");
        server.sandboxesV2()
                .suspendSandbox(SuspendSandboxRequest.newBuilder().setId(id).build()); // harmless twice
        assertThat(Files.size(t)).isEqualTo(frozenAt);

        server.sandboxesV2()
                .resumeSandbox(ResumeSandboxRequest.newBuilder().setId(id).build());
        Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> Files.size(t) > frozenAt + 40);
        assertThat(get(id).getStatusMessage()).contains("resumed");
        assertThat(sh(id, "wc -l < /workspace/t").getExitCode()).isZero();
        server.sandboxesV2()
                .resumeSandbox(ResumeSandboxRequest.newBuilder().setId(id).build()); // harmless twice

        // terminating a suspended sandbox ends it and everything in it
        server.sandboxesV2()
                .suspendSandbox(SuspendSandboxRequest.newBuilder().setId(id).build());
        terminate(id);
        assertThat(get(id).getStatus()).isEqualTo(SandboxStatus.SANDBOX_STATUS_TERMINATED);
        assertThat(ProcessHandle.allProcesses()
                        .filter(p -> p.info().commandLine().orElse("").contains("while :; do date")))
                .isEmpty();
        expectStatus(
                () -> server.sandboxesV2()
                        .suspendSandbox(
                                SuspendSandboxRequest.newBuilder().setId(id).build()),
                Status.Code.FAILED_PRECONDITION,
                "TERMINATED");
        expectStatus(
                () -> server.sandboxesV2()
                        .resumeSandbox(
                                ResumeSandboxRequest.newBuilder().setId("nope").build()),
                Status.Code.NOT_FOUND,
                "does not exist");
    }

    @Test
    void aSuspendedSandboxsLifetimeKeepsCounting(@TempDir Path otherDir) throws Exception {
        try (RunningServer short1 = RunningServer.start(otherDir, b -> b.sandboxLifetime(Duration.ofSeconds(3)))) {
            String id = short1.sandboxesV2()
                    .createSandbox(CreateSandboxRequest.newBuilder()
                            .setSpec(ChalkContainerSpec.getDefaultInstance())
                            .build())
                    .getSandbox()
                    .getId();
            short1.processes()
                    .execCommand(ExecCommandRequest.newBuilder()
                            .setSandboxId(id)
                            .setCommand("sh")
                            .addArgs("-c")
                            .addArgs("setsid sleep 4242 > /dev/null 2>&1 < /dev/null &")
                            .build());
            short1.sandboxesV2()
                    .suspendSandbox(SuspendSandboxRequest.newBuilder().setId(id).build());
            Awaitility.await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
                SandboxInfo info = short1.sandboxesV2()
                        .getSandbox(GetSandboxRequest.newBuilder().setId(id).build())
                        .getSandbox();
                assertThat(info.getStatus()).isEqualTo(SandboxStatus.SANDBOX_STATUS_TERMINATED);
                assertThat(info.getStatusMessage()).contains("lifetime of PT3S ran out");
            });
            assertThat(ProcessHandle.allProcesses()
                            .filter(p -> p.info().commandLine().orElse("").equals("sleep 4242")))
                    .isEmpty();

            // a spec's own lifetime, shorter than the server's
            String brief = short1.sandboxesV2()
                    .createSandbox(CreateSandboxRequest.newBuilder()
                            .setSpec(ChalkContainerSpec.newBuilder().setLifetime(Durations.fromMillis(1500)))
                            .build())
                    .getSandbox()
                    .getId();
            Awaitility.await()
                    .atMost(Duration.ofSeconds(15))
                    .until(() -> short1.sandboxesV2()
                            .getSandbox(
                                    GetSandboxRequest.newBuilder().setId(brief).build())
                            .getSandbox()
                            .getStatusMessage()
                            .contains("lifetime of PT1.5S ran out"));
            expectStatus(
                    () -> short1.sandboxesV2()
                            .createSandbox(CreateSandboxRequest.newBuilder()
                                    .setSpec(ChalkContainerSpec.newBuilder().setLifetime(Durations.fromSeconds(60)))
                                    .build()),
                    Status.Code.INVALID_ARGUMENT,
                    "lifetime 60s is longer than this server lets a sandbox run (3s");
        }
    }

    @Test
    void fieldsTheLocalRuntimeCannotHonourAreRefusedByName() {
        record Case(String field, UnaryOperator<ChalkContainerSpec.Builder> set) {}
        List<Case> cases = List.of(
                new Case("port", b -> b.setPort(8080)),
                new Case("enable_ssh", b -> b.setEnableSsh(true)),
                new Case("protocol", b -> b.setProtocol("http")),
                new Case("routing", b -> b.setRouting("path")),
                new Case("authentication", b -> b.setAuthentication("chalk")),
                new Case(
                        "security_policy.kernel_policy",
                        b -> b.setSecurityPolicy(ContainerSecurityPolicy.newBuilder()
                                .setKernelPolicy(KernelPolicy.KERNEL_POLICY_RESTRICTED))),
                new Case("compute_class", b -> b.setComputeClass(ComputeClass.COMPUTE_CLASS_K8S)),
                new Case(
                        "startup_probe",
                        b -> b.setStartupProbe(StartupProbe.newBuilder()
                                .setHttp(HttpProbe.newBuilder().setPath("/health")))),
                new Case(
                        "readiness_probe",
                        b -> b.setReadinessProbe(ReadinessProbe.newBuilder().setPeriodSeconds(5))),
                new Case("restart_policy", b -> b.setRestartPolicy(RestartPolicy.RESTART_POLICY_ALWAYS)),
                new Case(
                        "managed_ssh",
                        b -> b.putManagedSsh(
                                "github",
                                ManagedSshDestination.newBuilder()
                                        .setHost("github.com")
                                        .build())),
                new Case(
                        "resources.gpu",
                        b -> b.setResources(ResourceLimits.newBuilder().setGpu("1"))));
        for (Case c : cases) {
            expectStatus(
                    () -> create(c.set().apply(ChalkContainerSpec.newBuilder()).build()),
                    Status.Code.FAILED_PRECONDITION,
                    c.field() + " (");
        }
        // several at once are all named
        expectStatus(
                () -> create(ChalkContainerSpec.newBuilder()
                        .setPort(80)
                        .setEnableSsh(true)
                        .build()),
                Status.Code.FAILED_PRECONDITION,
                "port (");
        expectStatus(
                () -> create(ChalkContainerSpec.newBuilder()
                        .setPort(80)
                        .setEnableSsh(true)
                        .build()),
                Status.Code.FAILED_PRECONDITION,
                "enable_ssh (");
        // secret_refs are honoured (SecretInjectionTest): one naming no secret of the environment is refused by name
        expectStatus(
                () -> create(ChalkContainerSpec.newBuilder()
                        .addSecretRefs(SecretRef.newBuilder().setSecretName("OPENAI_API_KEY"))
                        .build()),
                Status.Code.FAILED_PRECONDITION,
                "secret OPENAI_API_KEY does not exist");
        // v1's validation, with v2's field names
        expectStatus(
                () -> create(ChalkContainerSpec.newBuilder()
                        .setImage("ubuntu:latest")
                        .build()),
                Status.Code.FAILED_PRECONDITION,
                "image \"ubuntu:latest\"");
        expectStatus(
                () -> create(ChalkContainerSpec.newBuilder()
                        .setResources(ResourceLimits.newBuilder().setMemory("4Gx"))
                        .build()),
                Status.Code.INVALID_ARGUMENT,
                "resources.memory \"4Gx\"");
        expectStatus(
                () -> create(
                        ChalkContainerSpec.newBuilder().putEnvVars("A=B", "x").build()),
                Status.Code.INVALID_ARGUMENT,
                "env_vars has an invalid variable name");
        expectStatus(
                () -> create(ChalkContainerSpec.newBuilder()
                        .addVolumes(ai.chalk.compute.proto.container.v1.VolumeMount.newBuilder()
                                .setName("v")
                                .setMountPath("/etc/x"))
                        .build()),
                Status.Code.INVALID_ARGUMENT,
                "inside a system directory");
        expectStatus(
                () -> create(ChalkContainerSpec.newBuilder()
                        .setLifetime(Durations.fromSeconds(-1))
                        .build()),
                Status.Code.INVALID_ARGUMENT,
                "lifetime must be positive");
        // fields set to what the runtime does anyway are fine
        String ok = create(ChalkContainerSpec.newBuilder()
                        .setEnableSsh(false)
                        .setComputeClass(ComputeClass.COMPUTE_CLASS_UNSPECIFIED)
                        .build())
                .getId();
        terminate(ok);
    }

    private static void expectStatus(Runnable call, Status.Code code, String messagePart) {
        assertThatThrownBy(call::run).isInstanceOf(StatusRuntimeException.class).satisfies(e -> {
            Status status = ((StatusRuntimeException) e).getStatus();
            assertThat(status.getCode()).as(status.toString()).isEqualTo(code);
            assertThat(status.getDescription()).contains(messagePart);
        });
    }
}
