package ai.chalk.compute.function.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.error.RemoteExecutionException;
import ai.chalk.compute.function.FunctionDefinition;
import ai.chalk.compute.function.FunctionRegistry;
import ai.chalk.compute.function.catalog.FunctionVersion;
import ai.chalk.compute.function.remote.RemoteFunction;
import ai.chalk.compute.function.worker.FunctionBinding;
import ai.chalk.compute.function.worker.FunctionWorker;
import ai.chalk.compute.function.worker.WorkerSettings;
import ai.chalk.compute.proto.blob.v1.BlobServiceGrpc;
import ai.chalk.compute.server.blob.BlobServiceV1;
import ai.chalk.compute.server.blob.BlobStore;
import com.acme.Orders;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The deploy and call flows of the client, against {@link RecordingCatalogForTests} (the real catalog is tested in
 * the server module) with the server's real BlobService and a real {@link FunctionWorker} on a Unix socket.
 */
class DeployAndCallTest {

    @TempDir
    Path dir;

    FunctionWorker worker;
    ManagedChannel workerChannel;
    RecordingCatalogForTests catalog;
    Server server;
    ManagedChannel channel;
    final AtomicInteger uploads = new AtomicInteger();
    final FunctionRegistry registry = new FunctionRegistry();
    FunctionDeployer deployer;

    @BeforeEach
    void start() throws Exception {
        registry.register(Orders.class);
        worker = FunctionWorker.start(new WorkerSettings(
                dir.resolve("w.sock"),
                FunctionBinding.parseList("add=com.acme.Orders#add,fail=com.acme.Orders#fail"),
                "plain",
                "w-1"));
        workerChannel = Grpc.newChannelBuilder("unix:" + dir.resolve("w.sock"), InsecureChannelCredentials.create())
                .build();
        BlobStore store = new BlobStore(Files.createDirectories(dir.resolve("blobs")));
        catalog = new RecordingCatalogForTests(store, workerChannel);
        String name = "deploy-" + UUID.randomUUID();
        server = InProcessServerBuilder.forName(name)
                .addService(new BlobServiceV1(store))
                .addService(catalog)
                .addService(catalog.new Poller())
                .build()
                .start();
        ClientInterceptor counter = new ClientInterceptor() {
            @Override
            public <Q, R> ClientCall<Q, R> interceptCall(
                    MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
                if (method.getFullMethodName()
                        .equals(BlobServiceGrpc.getUploadBlobMethod().getFullMethodName())) {
                    uploads.incrementAndGet();
                }
                return next.newCall(method, options);
            }
        };
        channel = InProcessChannelBuilder.forName(name).intercept(counter).build();
        deployer = ai.chalk.compute.sandbox.SandboxClient.forChannel(channel).functions();
    }

    @AfterEach
    void stop() throws Exception {
        channel.shutdownNow();
        server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        workerChannel.shutdownNow();
        worker.close();
    }

    @Test
    void missingCodeIsUploadedAndTheSameRequestSentOnceMore() throws Exception {
        FunctionDefinition add = registry.get("add").definition();
        try (CodeSnapshot code =
                CodeSnapshot.of(CodeSnapshotTest.classPath(Files.createDirectories(dir.resolve("app"))))) {
            FunctionVersion first = deployer.deploy(add, code, WorkerMode.PLAIN, false);

            assertThat(catalog.ensures).hasSize(2);
            assertThat(catalog.ensures.get(1)).isEqualTo(catalog.ensures.get(0));
            assertThat(uploads).hasValue(3); // two entries and the manifest
            assertThat(first.version()).isEqualTo(1);
            assertThat(first.functionName()).isEqualTo("add");
            assertThat(first.current()).isTrue();

            FunctionVersion second = deployer.deploy(add, code, WorkerMode.PLAIN, true);
            assertThat(catalog.ensures).hasSize(3); // the code is there: one request
            assertThat(uploads).hasValue(3);
            assertThat(catalog.ensures.get(2).getConfig().getOptionsMap()).containsKey("chalk_compute.force");
            assertThat(second.version()).isEqualTo(2);

            assertThat(deployer.versions("add"))
                    .extracting(FunctionVersion::version, FunctionVersion::current)
                    .containsExactly(
                            org.assertj.core.groups.Tuple.tuple(1, false),
                            org.assertj.core.groups.Tuple.tuple(2, true));
            deployer.rollback(first.functionId(), first.id());
            assertThat(catalog.updates).singleElement().satisfies(u -> {
                assertThat(u.getExternalFunctionId()).isEqualTo(first.functionId());
                assertThat(u.getTraffic().getTargetsList()).singleElement().satisfies(t -> {
                    assertThat(t.getExternalFunctionVersionId()).isEqualTo(first.id());
                    assertThat(t.getPercent()).isEqualTo(100);
                });
            });
            assertThat(deployer.versions("add"))
                    .filteredOn(FunctionVersion::current)
                    .extracting(FunctionVersion::id)
                    .containsExactly(first.id());

            deployer.delete("add");
            assertThat(catalog.deletes).extracting(d -> d.getFunctionName()).containsExactly("add");
            assertThatThrownBy(() -> deployer.versions("add"))
                    .isInstanceOf(ai.chalk.compute.error.ChalkComputeException.class)
                    .hasMessageContaining("NOT_FOUND");
        }
    }

    @Test
    void deployAllSendsOneRequestPerFunctionWithItsDeploymentsFunctions() throws Exception {
        FunctionRegistry both = new FunctionRegistry();
        both.register(com.acme.Embedder.class);
        both.register(Orders.class);
        try (CodeSnapshot code =
                CodeSnapshot.of(CodeSnapshotTest.classPath(Files.createDirectories(dir.resolve("app"))))) {
            // images with steps are built by the server's image service, which this stand-in lacks: name them here
            FunctionDeployer building = new FunctionDeployer(
                    channel, image -> image.steps().isEmpty() ? image.baseImage() : "built/" + image.contentHash());
            var deployed = building.deployAll(both, code, WorkerMode.PLAIN, false);

            assertThat(deployed.keySet())
                    .containsExactly(
                            "Embedder.calls",
                            "Embedder.embed",
                            "Embedder.similarity",
                            "add",
                            "fail",
                            "greet",
                            "search_orders");
            assertThat(uploads).hasValue(3); // uploaded once, for the first function
        }
        assertThat(catalog.ensures).hasSize(8); // the first refused for missing code, then one each
        String classFunctions = "Embedder.calls=com.acme.Embedder#calls,Embedder.embed=com.acme.Embedder#embed,"
                + "Embedder.similarity=com.acme.Embedder#similarity";
        assertThat(catalog.ensures.subList(1, 4))
                .allSatisfy(r -> assertThat(r.getConfig().getOptionsMap())
                        .containsEntry("chalk_compute.functions", classFunctions));
        assertThat(catalog.ensures.get(4).getFunctionName()).isEqualTo("add");
        assertThat(catalog.ensures.get(4).getConfig().getOptionsMap())
                .containsEntry("chalk_compute.functions", "add=com.acme.Orders#add");
        assertThat(catalog.ensures.get(6).getFunctionName()).isEqualTo("greet");
        assertThat(catalog.ensures.get(6).getSpec().getContainerSpec().getImage())
                .isEqualTo("built/" + Orders.image().contentHash());
        assertThat(catalog.ensures.get(7).getSpec().getContainerSpec().getImage())
                .isEqualTo("eclipse-temurin:17-jre");
    }

    @Test
    void remoteCallsReturnTypedResultsAndRaiseRemoteErrors() throws Exception {
        FunctionDefinition add = registry.get("add").definition();
        FunctionDefinition fail = registry.get("fail").definition();
        try (CodeSnapshot code =
                CodeSnapshot.of(CodeSnapshotTest.classPath(Files.createDirectories(dir.resolve("app"))))) {
            deployer.deploy(add, code, WorkerMode.PLAIN, false);
            deployer.deploy(fail, code, WorkerMode.PLAIN, false);
        }

        RemoteFunction remoteAdd = RemoteFunction.fromName(channel, "add", add);
        assertThat(remoteAdd.versionId()).contains("efv-add-1");
        assertThat(remoteAdd.call(20, 22)).isEqualTo(42);
        assertThat(remoteAdd.callBatch(List.of(new Object[] {1, 2}, new Object[] {3, 4})))
                .containsExactly(3, 7);
        assertThat(remoteAdd.callAsync(5, 6).get(30, TimeUnit.SECONDS)).isEqualTo(11);
        assertThat(RemoteFunction.fromVersionId(channel, "efv-add-1", add).call(1, 1))
                .isEqualTo(2);

        RemoteFunction generic = RemoteFunction.fromName(channel, "add");
        assertThat(generic.call(40, 2)).isEqualTo(42);
        assertThat(generic.callBatch(List.of(new Object[] {1, 1}, new Object[] {2, 2})))
                .containsExactly(2, 4);
        assertThat(RemoteFunction.fromVersionId(channel, "efv-add-1")
                        .callAsync(3, 3)
                        .get(30, TimeUnit.SECONDS))
                .isEqualTo(6);
        assertThatThrownBy(() -> generic.call(1)).hasMessageContaining("takes 2 arguments [a, b] but 1 were given");
        try (CodeSnapshot code =
                CodeSnapshot.of(CodeSnapshotTest.classPath(Files.createDirectories(dir.resolve("app2"))))) {
            deployer.deploy(registry.get("search_orders").definition(), code, WorkerMode.PLAIN, false);
        }
        assertThat(RemoteFunction.fromName(channel, "search_orders").name())
                .as("its record parameter is on this class path, so the generic form is that record")
                .isEqualTo("search_orders");

        deployer.deploy(
                add, CodeSnapshot.of(List.of()), WorkerMode.PLAIN, true); // version 2 (empty code, never called)
        assertThat(remoteAdd.name()).isEqualTo("add");
        assertThat(remoteAdd.versions())
                .extracting(FunctionVersion::id, FunctionVersion::current)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("efv-add-1", false),
                        org.assertj.core.groups.Tuple.tuple("efv-add-2", true));
        remoteAdd.rollback("efv-add-1");
        RemoteFunction following = RemoteFunction.fromFunctionId(channel, "fn-add", add);
        assertThat(following.versionId()).isEmpty();
        assertThat(following.name()).isEqualTo("add");
        assertThat(following.versions())
                .filteredOn(FunctionVersion::current)
                .extracting(FunctionVersion::id)
                .containsExactly("efv-add-1");
        assertThat(following.call(2, 2)).isEqualTo(4);

        RemoteFunction remoteFail = RemoteFunction.fromName(channel, "fail", fail);
        assertThatThrownBy(() -> remoteFail.call("no stock"))
                .isInstanceOfSatisfying(RemoteExecutionException.class, e -> {
                    assertThat(e.statusCode()).isEqualTo(Status.Code.UNKNOWN);
                    assertThat(e.exceptionType()).isEqualTo("java.lang.IllegalStateException");
                    assertThat(e.remoteMessage()).isEqualTo("no stock");
                    assertThat(e.remoteTraceback()).contains("at com.acme.Orders.fail(");
                    assertThat(e.internalTraceback()).contains("ai.chalk.compute.function.RegisteredFunction");
                    assertThat(e.callId())
                            .hasValueSatisfying(id -> assertThat(id).startsWith("call-"));
                    assertThat(e.traceId()).isEmpty();
                });
        assertThatThrownBy(() -> remoteFail.callAsync("later").get(30, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .cause()
                .isInstanceOfSatisfying(RemoteExecutionException.class, e -> {
                    assertThat(e.exceptionType()).isEqualTo("java.lang.IllegalStateException");
                    assertThat(e.remoteMessage()).isEqualTo("later");
                    assertThat(e.callId()).isPresent();
                });
        remoteFail.delete();
        assertThat(catalog.deletes).extracting(d -> d.getFunctionName()).containsExactly("fail");
    }
}
