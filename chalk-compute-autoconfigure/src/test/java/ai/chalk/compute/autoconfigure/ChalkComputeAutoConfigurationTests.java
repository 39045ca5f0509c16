package ai.chalk.compute.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.autoconfigure.auth.ChalkComputeAuthAutoConfiguration;
import ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServer;
import ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServerAutoConfiguration;
import ai.chalk.compute.autoconfigure.progress.ChalkComputeProgressAutoConfiguration;
import ai.chalk.compute.error.ServerUnavailableException;
import ai.chalk.compute.progress.ProgressDisplay;
import ai.chalk.compute.progress.ProgressSettings;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.sql.SQLClient;
import io.grpc.BindableService;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.inprocess.InProcessChannelBuilder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.ssl.SslAutoConfiguration;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.grpc.client.autoconfigure.CompositeChannelFactoryAutoConfiguration;
import org.springframework.boot.grpc.client.autoconfigure.GrpcClientAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.grpc.client.GlobalClientInterceptor;
import org.springframework.grpc.client.GrpcChannelFactory;

/** The conditions of the Chalk Compute auto-configuration, each in a context of its own. */
class ChalkComputeAutoConfigurationTests {

    @TempDir
    Path tmp;

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    ChalkComputeAutoConfiguration.class,
                    EmbeddedComputeServerAutoConfiguration.class,
                    ChalkComputeAuthAutoConfiguration.class,
                    ChalkComputeProgressAutoConfiguration.class));

    /** The same with Spring gRPC's client auto-configuration, as in an application with the starter. */
    private final ApplicationContextRunner withSpringGrpc = runner.withConfiguration(AutoConfigurations.of(
            GrpcClientAutoConfiguration.class,
            CompositeChannelFactoryAutoConfiguration.class,
            SslAutoConfiguration.class));

    @Test
    void sandboxDefaultPropertiesGiveEverySandboxALifetimeAndTagsUnlessItSetsItsOwn() {
        runner.withPropertyValues(
                        "chalk.compute.sandbox.default-lifetime=10m",
                        "chalk.compute.sandbox.default-tags.app=agent",
                        "chalk.compute.sandbox.default-tags.team=platform")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    SandboxClient client = context.getBean(SandboxClient.class);
                    assertThat(client.sandboxDefaults().lifetime()).contains(java.time.Duration.ofMinutes(10));
                    Sandbox plain = client.create();
                    Sandbox own = client.create(Sandbox.builder().tag("team", "search"));
                    try {
                        assertThat(plain.info().tags())
                                .containsExactlyInAnyOrderEntriesOf(Map.of("app", "agent", "team", "platform"));
                        assertThat(own.info().tags())
                                .containsExactlyInAnyOrderEntriesOf(Map.of("app", "agent", "team", "search"));
                    } finally {
                        plain.terminate();
                        own.terminate();
                    }
                });
    }

    @Test
    void withNothingConfiguredTheClientTalksToTheEmbeddedServerInProcess() {
        runner.run(context -> {
            assertThat(context)
                    .hasNotFailed()
                    .hasSingleBean(EmbeddedComputeServer.class)
                    .hasSingleBean(SandboxClient.class);
            EmbeddedComputeServer embedded = context.getBean(EmbeddedComputeServer.class);
            assertThat(embedded.isRunning()).isTrue();
            assertThat(embedded.port()).as("no TCP port unless asked for").isEmpty();
            ChalkComputeChannel channel = context.getBean(ChalkComputeChannel.class);
            assertThat(channel.isEmbedded()).isTrue();
            assertThat(channel.target()).isEqualTo("in-process:" + embedded.inProcessName());

            SandboxClient client = context.getBean(SandboxClient.class);
            Sandbox sandbox = client.create();
            assertThat(sandbox.exec("echo", "hello").stdoutText()).isEqualTo("hello\n");
            sandbox.terminate();
        });
    }

    @Test
    void theEmbeddedServerRegistersNothingThatCouldCollideWithTheApplication() {
        withSpringGrpc.run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(EmbeddedComputeServer.class);
            assertThat(context)
                    .doesNotHaveBean(DataSource.class)
                    .doesNotHaveBean(BindableService.class)
                    .doesNotHaveBean(ComputeServer.class)
                    .doesNotHaveBean(ManagedChannel.class)
                    .doesNotHaveBean("org.springframework.grpc.server.GrpcServerFactory");
        });
    }

    @Test
    void theEmbeddedServerStopsWithTheContext() {
        EmbeddedComputeServer[] embedded = new EmbeddedComputeServer[1];
        SandboxClient[] client = new SandboxClient[1];
        runner.run(context -> {
            embedded[0] = context.getBean(EmbeddedComputeServer.class);
            // the application's startup does not wait for the server; a client of one's own waits for it first
            embedded[0].awaitServing();
            client[0] = SandboxClient.inProcess(embedded[0].inProcessName());
            assertThat(client[0].list()).isEmpty();
        });
        assertThat(embedded[0].isRunning()).isFalse();
        assertThat(embedded[0].details()).containsEntry("running", false);
        org.assertj.core.api.Assertions.assertThatThrownBy(client[0]::list)
                .isInstanceOf(ServerUnavailableException.class);
        client[0].close();
    }

    @Test
    void anEmbeddedServerThatCannotStartFailsItsCallsAndHealthWithTheReasonNotTheApplicationsStartup()
            throws Exception {
        Path notADirectory = java.nio.file.Files.writeString(tmp.resolve("not-a-directory"), "x");
        runner.withPropertyValues("chalk.compute.embedded.data-dir=" + notADirectory)
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    EmbeddedComputeServer embedded = context.getBean(EmbeddedComputeServer.class);
                    assertThat(embedded.isRunning()).isTrue();
                    assertThatThrownBy(
                                    () -> context.getBean(SandboxClient.class).list())
                            .hasMessageContaining("The embedded Chalk Compute server did not start")
                            .hasMessageContaining("chalk.compute.embedded.data-dir=" + notADirectory);
                    assertThat(embedded.isServing()).isFalse();
                    assertThat(embedded.server()).isNull();
                    assertThat(embedded.details())
                            .containsEntry("running", false)
                            .hasEntrySatisfying(
                                    "error", error -> assertThat((String) error).contains("did not start"));
                });
    }

    @Test
    void theApplicationsStartupDoesNotWaitForTheEmbeddedServerButItsFirstCallDoes() {
        SlowServerStart.release = new java.util.concurrent.CountDownLatch(1);
        runner.withUserConfiguration(SlowServerStart.class).run(context -> {
            EmbeddedComputeServer embedded = context.getBean(EmbeddedComputeServer.class);
            // the context started while the server's start was still held back
            assertThat(embedded.isRunning()).isTrue();
            assertThat(SlowServerStart.release.getCount()).isEqualTo(1);
            new Thread(() -> {
                        try {
                            Thread.sleep(300);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                        SlowServerStart.release.countDown();
                    })
                    .start();
            // the first call waits for the start begun when the bean was made
            assertThat(context.getBean(SandboxClient.class).list()).isEmpty();
            assertThat(SlowServerStart.release.getCount()).isZero();
            assertThat(embedded.server()).isNotNull();
            assertThat(embedded.details()).containsEntry("runtime", embedded.runtimeName());
        });
    }

    @Test
    void underASpringApplicationTheEmbeddedServerStartsOnceTheApplicationIsReady() {
        ServerStartSeen.seen = new java.util.concurrent.CountDownLatch(1);
        // what SpringApplication registers before the refresh, and a plain context lacks
        runner.withUserConfiguration(ServerStartSeen.class)
                .withInitializer(context -> context.getBeanFactory()
                        .registerSingleton(
                                "springApplicationArguments",
                                new org.springframework.boot.DefaultApplicationArguments()))
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    // refreshed and started, its runners still to come: the server's start has not begun
                    assertThat(ServerStartSeen.seen.await(500, java.util.concurrent.TimeUnit.MILLISECONDS))
                            .isFalse();
                    context.getSourceApplicationContext()
                            .publishEvent(new org.springframework.boot.context.event.ApplicationReadyEvent(
                                    new org.springframework.boot.SpringApplication(),
                                    new String[0],
                                    context.getSourceApplicationContext(),
                                    java.time.Duration.ZERO));
                    // ready: it begins without a call asking for it
                    assertThat(ServerStartSeen.seen.await(30, java.util.concurrent.TimeUnit.SECONDS))
                            .isTrue();
                    assertThat(context.getBean(SandboxClient.class).list()).isEmpty();
                });
    }

    @Test
    void whenTheContextFailsAfterTheServerBeganStartingTheServerIsStoppedToo() {
        runner.withUserConfiguration(FailingBean.class).run(context -> {
            assertThat(context).hasFailed();
            assertThat(FailingBean.serverName).isNotNull();
        });
        try (SandboxClient leftover = SandboxClient.inProcess(FailingBean.serverName)) {
            org.assertj.core.api.Assertions.assertThatThrownBy(leftover::list)
                    .isInstanceOf(ServerUnavailableException.class);
        }
    }

    @Test
    void anEmbeddedPortOpensOnLoopbackWhenAskedFor() {
        runner.withPropertyValues("chalk.compute.embedded.port=0").run(context -> {
            EmbeddedComputeServer embedded = context.getBean(EmbeddedComputeServer.class);
            assertThat(embedded.port()).isPresent();
            try (SandboxClient overTcp =
                    SandboxClient.connect("127.0.0.1:" + embedded.port().getAsInt())) {
                assertThatThrownBy(overTcp::list)
                        .as("TCP clients show a token by default")
                        .hasMessageContaining("requires an access token");
            }
        });
        runner.withPropertyValues("chalk.compute.embedded.port=0", "chalk.compute.embedded.auth=none")
                .run(context -> {
                    EmbeddedComputeServer embedded = context.getBean(EmbeddedComputeServer.class);
                    try (SandboxClient overTcp =
                            SandboxClient.connect("127.0.0.1:" + embedded.port().getAsInt())) {
                        assertThat(overTcp.list()).isEmpty();
                    }
                });
    }

    @Test
    void aDataDirectoryIsKeptAcrossRuns() {
        Path dataDir = tmp.resolve("state");
        String[] id = new String[1];
        runner.withPropertyValues("chalk.compute.embedded.data-dir=" + dataDir).run(context -> {
            Sandbox sandbox = context.getBean(SandboxClient.class)
                    .create(Sandbox.builder().name("kept"));
            id[0] = sandbox.id();
        });
        assertThat(dataDir).isDirectory();
        runner.withPropertyValues("chalk.compute.embedded.data-dir=" + dataDir)
                .run(context -> assertThat(context.getBean(SandboxClient.class)
                                .get(id[0])
                                .info()
                                .name())
                        .contains("kept"));
    }

    @Test
    void withoutTheServerModuleThereIsNoEmbeddedServerAndAClearFailure() {
        runner.withClassLoader(new FilteredClassLoader(ComputeServer.class)).run(context -> {
            assertThat(context).hasFailed();
            assertThat(context)
                    .getFailure()
                    .rootCause()
                    .hasMessageContaining("Chalk Compute has no server to talk to")
                    .hasMessageContaining("chalk.compute.target");
        });
    }

    @Test
    void withoutTheServerModuleARemoteTargetWorks() {
        runner.withClassLoader(new FilteredClassLoader(ComputeServer.class))
                .withPropertyValues("chalk.compute.target=localhost:50051")
                .run(context -> {
                    assertThat(context).hasNotFailed().doesNotHaveBean(EmbeddedComputeServer.class);
                    assertThat(context.getBean(ChalkComputeChannel.class).target())
                            .isEqualTo("localhost:50051");
                });
    }

    @Test
    void aRemoteTargetTurnsTheEmbeddedServerOff() throws Exception {
        try (TestServers.RecordingServer remote = new TestServers.RecordingServer(tmp.resolve("remote"), null, null)) {
            runner.withPropertyValues("chalk.compute.target=127.0.0.1:" + remote.port())
                    .run(context -> {
                        assertThat(context).hasNotFailed().doesNotHaveBean(EmbeddedComputeServer.class);
                        ChalkComputeChannel channel = context.getBean(ChalkComputeChannel.class);
                        assertThat(channel.kind()).isEqualTo(ChalkComputeChannel.Kind.REMOTE);
                        assertThat(context.getBean(SandboxClient.class).list()).isEmpty();
                        assertThat(remote.calls()).isEqualTo(1);
                    });
        }
    }

    @Test
    void theTargetCanComeFromAnEnvironmentVariableThroughRelaxedBinding() {
        runner.withInitializer(TestEnvironment.of(Map.of("CHALK_COMPUTE_TARGET", "compute.internal:50051"), tmp))
                .run(context -> {
                    assertThat(context).hasNotFailed().doesNotHaveBean(EmbeddedComputeServer.class);
                    assertThat(context.getBean(ChalkComputeChannel.class).target())
                            .isEqualTo("compute.internal:50051");
                });
    }

    @Test
    void aUrlTargetIsAcceptedAndItsPortDefaults() {
        runner.withPropertyValues("chalk.compute.target=http://127.0.0.1")
                .run(context -> assertThat(
                                context.getBean(ChalkComputeChannel.class).target())
                        .isEqualTo("127.0.0.1:80"));
    }

    @Test
    void embeddedEnabledTrueRunsTheServerEvenWithATarget() {
        runner.withPropertyValues("chalk.compute.target=localhost:50051", "chalk.compute.embedded.enabled=true")
                .run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(EmbeddedComputeServer.class);
                    assertThat(context.getBean(ChalkComputeChannel.class).isEmbedded())
                            .isFalse();
                });
    }

    @Test
    void embeddedEnabledFalseWithoutATargetFailsClearly() {
        runner.withPropertyValues("chalk.compute.embedded.enabled=false").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context).getFailure().rootCause().hasMessageContaining("no server to talk to");
        });
    }

    @Test
    void aRuntimeThisServerDoesNotHaveIsRefusedNamingTheProperty() {
        runner.withPropertyValues("chalk.compute.embedded.runtime=kubernetes").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure())
                    .hasStackTraceContaining("chalk.compute.embedded.runtime")
                    .hasStackTraceContaining("kubernetes");
        });
    }

    /** CI runs a Docker engine; without one, the failure must say so. */
    @Test
    void theDockerRuntimeRunsOnTheEngineOrSaysThereIsNone() {
        boolean engine = ai.chalk.compute.server.runtime.docker.DockerRuntime.engineAnswers(
                null, java.time.Duration.ofSeconds(2));
        runner.withPropertyValues("chalk.compute.embedded.runtime=docker").run(context -> {
            if (engine) {
                assertThat(context).hasNotFailed();
                assertThat(context.getBean(EmbeddedComputeServer.class).runtimeName())
                        .isEqualTo("docker");
            } else {
                assertThat(context).hasFailed();
                assertThat(context.getStartupFailure().getCause())
                        .hasMessageContaining("chalk.compute.embedded.runtime=docker")
                        .hasMessageContaining("no Docker engine at");
            }
        });
    }

    @Test
    void invalidValuesFailBindingNamingTheProperty() {
        Map<String, String> invalid = Map.of(
                "chalk.compute.tui", "maybe",
                "chalk.compute.color", "sometimes",
                "chalk.compute.embedded.runtime", "podman",
                "chalk.compute.local.isolation", "strict",
                "chalk.compute.embedded.port", "70000",
                "chalk.compute.target", "https://",
                "chalk.compute.api-server", "api.chalk.ai",
                "chalk.compute.sandbox.default-lifetime", "0s");
        invalid.forEach((property, value) -> runner.withPropertyValues(property + "=" + value)
                .run(context -> {
                    assertThat(context).as(property).hasFailed();
                    BindException bind = findBindException(context.getStartupFailure());
                    assertThat(bind).as(property + " should fail binding").isNotNull();
                    // what Spring Boot's failure analysis prints as "Property: ..." at startup
                    assertThat(bind.getProperty().getName()).as(property).hasToString(property);
                    assertThat(bind.getProperty().getValue()).hasToString(value);
                }));
        // the embedded switch is read by a condition before the properties bean: it fails the same way
        runner.withPropertyValues("chalk.compute.embedded.enabled=perhaps").run(context -> {
            assertThat(context).hasFailed();
            assertThat(findBindException(context.getStartupFailure())
                            .getProperty()
                            .getName())
                    .hasToString("chalk.compute.embedded.enabled");
        });
    }

    @Test
    void throughSpringGrpcTheChannelGetsGlobalInterceptorsForTheEmbeddedServer() {
        withSpringGrpc.withUserConfiguration(RecordingGlobalInterceptor.class).run(context -> {
            assertThat(context).hasNotFailed().hasBean("inProcessGrpcChannelFactory");
            context.getBean(SandboxClient.class).list();
            assertThat(context.getBean(RecordingGlobalInterceptor.class).methods)
                    .containsExactly("chalk.sandbox.v1.SandboxService/ListSandboxes");
        });
    }

    @Test
    void throughSpringGrpcTheChannelGetsGlobalInterceptorsAndClientPropertiesForARemoteTarget() throws Exception {
        try (TestServers.RecordingServer remote = new TestServers.RecordingServer(tmp.resolve("remote"), null, null)) {
            withSpringGrpc
                    .withUserConfiguration(RecordingGlobalInterceptor.class)
                    .withPropertyValues(
                            "chalk.compute.target=127.0.0.1:" + remote.port(),
                            "spring.grpc.client.default-channel.user-agent=chalk-test-agent")
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        context.getBean(SandboxClient.class).list();
                        assertThat(context.getBean(RecordingGlobalInterceptor.class).methods)
                                .containsExactly("chalk.sandbox.v1.SandboxService/ListSandboxes");
                        assertThat(remote.header("user-agent").get(0)).startsWith("chalk-test-agent");
                    });
        }
    }

    @Test
    void theTargetMayNameASpringGrpcChannel() throws Exception {
        try (TestServers.RecordingServer remote = new TestServers.RecordingServer(tmp.resolve("remote"), null, null)) {
            withSpringGrpc
                    .withPropertyValues(
                            "chalk.compute.target=compute",
                            "spring.grpc.client.channels.compute.address=static://127.0.0.1:" + remote.port())
                    .run(context -> {
                        assertThat(context.getBean(SandboxClient.class).list()).isEmpty();
                        assertThat(remote.calls()).isEqualTo(1);
                    });
        }
    }

    @Test
    void withoutSpringGrpcTheChannelIsOpenedWithGrpcJava() throws Exception {
        try (TestServers.RecordingServer remote = new TestServers.RecordingServer(tmp.resolve("remote"), null, null)) {
            runner.withClassLoader(new FilteredClassLoader(GrpcChannelFactory.class))
                    .withPropertyValues("chalk.compute.target=127.0.0.1:" + remote.port())
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(context.getBean(SandboxClient.class).list()).isEmpty();
                    });
        }
    }

    @Test
    void anHttpsTargetUsesTlsTrustingTheGivenCertificatesThroughSpringGrpc() throws Exception {
        Path cert = tmp.resolve("cert.pem");
        Path key = tmp.resolve("key.pem");
        TestServers.selfSignedCertificate(tmp, cert, key);
        try (TestServers.RecordingServer remote = new TestServers.RecordingServer(tmp.resolve("remote"), cert, key)) {
            withSpringGrpc
                    .withPropertyValues(
                            "chalk.compute.target=https://localhost:" + remote.port(),
                            "chalk.compute.tls.trust-certificates=" + cert)
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        SandboxClient client = context.getBean(SandboxClient.class);
                        assertThat(client.list()).isEmpty();
                        // the server's signed links are HTTPS with the same certificate, trusted the same way
                        Path csv = Files.writeString(tmp.resolve("rows.csv"), "question,answer\nhi,hello\n");
                        String revision = client.datasets().upload("tls", csv).revisionId();
                        assertThat(client.datasets().download(revision, tmp.resolve("back")))
                                .singleElement()
                                .satisfies(f -> assertThat(f).isNotEmptyFile());
                        assertThat(context.getBean(SQLClient.class)
                                        .submit("SELECT answer FROM chalk.datasets.tls")
                                        .await(java.time.Duration.ofMinutes(1))
                                        .download(tmp.resolve("shards")))
                                .isNotEmpty();
                    });
            // without trusting the certificate the same target is refused: TLS really is in use
            withSpringGrpc
                    .withPropertyValues("chalk.compute.target=https://localhost:" + remote.port())
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        SandboxClient client = context.getBean(SandboxClient.class);
                        org.assertj.core.api.Assertions.assertThatThrownBy(client::list)
                                .isInstanceOf(ServerUnavailableException.class);
                    });
            // and so is plaintext, chosen with chalk.compute.tls.enabled=false
            withSpringGrpc
                    .withPropertyValues(
                            "chalk.compute.target=localhost:" + remote.port(), "chalk.compute.tls.enabled=false")
                    .run(context -> org.assertj.core.api.Assertions.assertThatThrownBy(
                                    context.getBean(SandboxClient.class)::list)
                            .isInstanceOf(ServerUnavailableException.class));
        }
    }

    @Test
    void anHttpsTargetUsesTlsWithGrpcJavaAlone() throws Exception {
        Path cert = tmp.resolve("cert.pem");
        Path key = tmp.resolve("key.pem");
        TestServers.selfSignedCertificate(tmp, cert, key);
        try (TestServers.RecordingServer remote = new TestServers.RecordingServer(tmp.resolve("remote"), cert, key)) {
            runner.withClassLoader(new FilteredClassLoader(GrpcChannelFactory.class))
                    .withPropertyValues(
                            "chalk.compute.target=localhost:" + remote.port(),
                            "chalk.compute.tls.trust-certificates=" + cert)
                    .run(context -> assertThat(
                                    context.getBean(SandboxClient.class).list())
                            .isEmpty());
        }
    }

    @Test
    void channelInterceptorBeansGoInFrontInOrderAndByKind() {
        runner.withUserConfiguration(OrderedInterceptors.class).run(context -> {
            context.getBean(SandboxClient.class).list();
            assertThat(OrderedInterceptors.seen).containsExactly("first", "second");
        });
    }

    @Test
    void theUsersBeansWin() {
        runner.withUserConfiguration(UserBeans.class).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(SandboxClient.class)).isSameAs(context.getBean(UserBeans.class).client);
            assertThat(context.getBean(ChalkComputeChannel.class)).isSameAs(context.getBean(UserBeans.class).channel);
            assertThat(context.getBean(ProgressSettings.class)).isSameAs(UserBeans.SETTINGS);
            assertThat(context.getBean(ProgressDisplay.class).settings()).isSameAs(UserBeans.SETTINGS);
        });
    }

    @Test
    void aUsersOwnClientStartsNoEmbeddedServerAndNoChannel() {
        runner.withUserConfiguration(UserClientOnly.class).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).hasSingleBean(SandboxClient.class);
            assertThat(context).doesNotHaveBean(EmbeddedComputeServer.class);
            assertThat(context).doesNotHaveBean(ChalkComputeChannel.class);
        });
        runner.withUserConfiguration(UserClientOnly.class)
                .withClassLoader(new org.springframework.boot.test.context.FilteredClassLoader(
                        ai.chalk.compute.server.ComputeServer.class))
                .run(context -> assertThat(context).hasNotFailed().hasSingleBean(SandboxClient.class));
        // asked for explicitly, the embedded server still runs beside the user's client
        runner.withUserConfiguration(UserClientOnly.class)
                .withPropertyValues("chalk.compute.embedded.enabled=true")
                .run(context -> assertThat(context).hasSingleBean(EmbeddedComputeServer.class));
    }

    @Test
    void anEmptyTargetMeansTheEmbeddedServerAndNoCredentials() {
        runner.withPropertyValues("chalk.compute.target=").run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).hasSingleBean(EmbeddedComputeServer.class);
            assertThat(context).doesNotHaveBean(ai.chalk.compute.auth.ChalkCredentials.class);
        });
    }

    /** Only a client, for a server of the application's choosing. */
    @Configuration(proxyBeanMethods = false)
    static class UserClientOnly {
        @Bean(destroyMethod = "close")
        SandboxClient myClient() {
            return SandboxClient.connect("localhost:1");
        }
    }

    @Test
    void theUsersEmbeddedServerWins() {
        runner.withUserConfiguration(UserServer.class).run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(EmbeddedComputeServer.class);
            EmbeddedComputeServer server = context.getBean(EmbeddedComputeServer.class);
            assertThat(server.inProcessName()).isEqualTo("users-own");
            assertThat(context.getBean(ChalkComputeChannel.class).target()).isEqualTo("in-process:users-own");
        });
    }

    static BindException findBindException(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof BindException bind) {
                return bind;
            }
        }
        return null;
    }

    /** Records the methods called through Spring gRPC's global interceptors. */
    @Configuration(proxyBeanMethods = false)
    static class RecordingGlobalInterceptor {
        final List<String> methods = new CopyOnWriteArrayList<>();

        @Bean
        @GlobalClientInterceptor
        ClientInterceptor recordingInterceptor() {
            return new ClientInterceptor() {
                @Override
                public <Q, R> ClientCall<Q, R> interceptCall(
                        MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
                    methods.add(method.getFullMethodName());
                    return next.newCall(method, options);
                }
            };
        }
    }

    /** Two interceptors given out of order, and one for remote channels only. */
    @Configuration(proxyBeanMethods = false)
    static class OrderedInterceptors {
        static final List<String> seen = new CopyOnWriteArrayList<>();

        @Bean
        ChalkComputeChannelInterceptor second() {
            return named("second", 20, true);
        }

        @Bean
        ChalkComputeChannelInterceptor first() {
            return named("first", 10, true);
        }

        @Bean
        ChalkComputeChannelInterceptor remoteOnly() {
            return named("remote-only", 0, false);
        }

        private static ChalkComputeChannelInterceptor named(String name, int order, boolean embeddedToo) {
            return new ChalkComputeChannelInterceptor() {
                @Override
                public <Q, R> ClientCall<Q, R> interceptCall(
                        MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
                    seen.add(name);
                    return next.newCall(method, options);
                }

                @Override
                public int getOrder() {
                    return order;
                }

                @Override
                public boolean appliesTo(ChalkComputeChannel.Kind kind) {
                    return embeddedToo || kind == ChalkComputeChannel.Kind.REMOTE;
                }
            };
        }
    }

    /** The application's own client, channel and progress settings. */
    @Configuration(proxyBeanMethods = false)
    static class UserBeans {
        static final ProgressSettings SETTINGS =
                ProgressSettings.fromEnv(Map.of()).withTerminal(false);
        final ManagedChannel managed =
                InProcessChannelBuilder.forName("nowhere").build();
        final ChalkComputeChannel channel = ChalkComputeChannel.remote(managed, "nowhere");
        final SandboxClient client = SandboxClient.forChannel(managed);

        @Bean
        ChalkComputeChannel myChannel() {
            return channel;
        }

        @Bean
        SandboxClient myClient() {
            return client;
        }

        @Bean
        ProgressSettings myProgressSettings() {
            return SETTINGS;
        }
    }

    /** A bean that fails after the embedded server began starting. */
    @Configuration(proxyBeanMethods = false)
    static class FailingBean {
        static volatile String serverName;

        @Bean
        Object failing(EmbeddedComputeServer server) throws Exception {
            serverName = server.inProcessName();
            server.awaitServing(); // a bean may use the server while the context is being created
            throw new IllegalStateException("the application fails to start");
        }
    }

    /** Holds the embedded server's start back until the test releases it. */
    @Configuration(proxyBeanMethods = false)
    static class SlowServerStart {
        static volatile java.util.concurrent.CountDownLatch release;

        @Bean
        ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServerCustomizer holdBack() {
            return settings -> {
                try {
                    release.await(30, java.util.concurrent.TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            };
        }
    }

    /** Notes when the embedded server's start makes its settings, without waiting for it. */
    @Configuration(proxyBeanMethods = false)
    static class ServerStartSeen {
        static volatile java.util.concurrent.CountDownLatch seen;

        @Bean
        ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServerCustomizer noteStart() {
            return settings -> seen.countDown();
        }
    }

    /** The application's own embedded server. */
    @Configuration(proxyBeanMethods = false)
    static class UserServer {
        @Bean
        EmbeddedComputeServer myServer() {
            return new EmbeddedComputeServer(ComputeServer.builder(), "users-own", null, "users own");
        }
    }
}
