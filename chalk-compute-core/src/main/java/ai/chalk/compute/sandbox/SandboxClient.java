package ai.chalk.compute.sandbox;

import ai.chalk.compute.auth.ChalkCredentials;
import ai.chalk.compute.auth.TokenSource;
import ai.chalk.compute.connection.ConnectionSettings;
import ai.chalk.compute.image.Image;
import ai.chalk.compute.image.Images;
import ai.chalk.compute.network.NetworkSpecs;
import ai.chalk.compute.progress.ProgressDisplay;
import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.secret.SecretBindings;
import ai.chalk.compute.secret.SecretsClient;
import ai.chalk.compute.volume.Volumes;
import io.grpc.Channel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;
import org.slf4j.LoggerFactory;

/**
 * The entry point to sandboxes on a Chalk Compute server: create, run, list and look them up.
 *
 * <pre>{@code
 * try (SandboxClient client = SandboxClient.fromEnv()) {
 *     try (Sandbox sandbox = client.create()) {
 *         ExecResult result = sandbox.exec("echo", "hello world");
 *         System.out.println(result.stdoutText());
 *     } // terminated here
 * }
 * }</pre>
 *
 * <p>Connect with {@link #fromEnv()}, {@link #connect(String)}, {@link #builder()} (TLS, token),
 * {@link #inProcess(String)} (a server embedded in this JVM) or {@link #forChannel(Channel)}.
 * A client is thread-safe; share one per server. Closing it closes the connection it opened.
 */
public final class SandboxClient implements AutoCloseable, ai.chalk.compute.connection.ServerChannel {

    private final ClientConnection connection;
    private final SandboxCalls calls;
    private final Volumes volumes;
    private final Images images;
    private final SecretsClient secrets;
    private final Snapshots snapshots;
    private final SandboxDefaults defaults;
    private final ProgressDisplay progress;
    private volatile boolean closed;

    /** @param progress where long operations (image builds) show their progress */
    private SandboxClient(ClientConnection connection, ProgressDisplay progress) {
        this.connection = connection;
        this.calls = new SandboxCalls(connection.channel());
        this.volumes = new Volumes(connection.channel());
        this.images = new Images(connection.channel(), progress);
        this.progress = progress;
        this.secrets = new SecretsClient(connection.channel());
        this.snapshots = new Snapshots(this);
        this.defaults = SandboxDefaults.none();
    }

    /**
     * A client sharing {@code other}'s connection (not owning it) that reads local secrets from {@code local}, or
     * from where {@code other} reads them when {@code local} is null, and gives sandboxes {@code defaults}.
     */
    private SandboxClient(SandboxClient other, Function<String, String> local, SandboxDefaults defaults) {
        this.connection = ClientConnection.sharing(other.connection);
        this.calls = other.calls;
        this.volumes = other.volumes;
        this.images = other.images;
        this.progress = other.progress;
        this.secrets = local == null ? other.secrets : new SecretsClient(connection.channel(), local);
        this.snapshots = new Snapshots(this);
        this.defaults = defaults;
    }

    // ---- connecting ----

    /**
     * Connects to a server embedded in this JVM through gRPC's in-process transport.
     *
     * @param serverName the in-process name the server was started with
     * @return a client owning its channel
     */
    public static SandboxClient inProcess(String serverName) {
        return inProcess(serverName, ProgressDisplay.fromEnv());
    }

    /**
     * Connects to a server embedded in this JVM, showing progress (image builds) on the given display.
     *
     * @param serverName the in-process name the server was started with
     * @param progress   where long operations show their progress
     * @return a client owning its channel
     */
    public static SandboxClient inProcess(String serverName, ProgressDisplay progress) {
        Objects.requireNonNull(serverName, "serverName");
        return new SandboxClient(ClientConnection.inProcess(serverName), progress);
    }

    /**
     * Connects without TLS to {@code host:port} (local development), or to a URL:
     * {@code https://host[:port]} connects with TLS.
     *
     * @param target {@code host:port} or a URL
     * @return a client owning its channel; it connects on the first call
     */
    public static SandboxClient connect(String target) {
        return connect(ConnectionSettings.forTarget(target));
    }

    /**
     * Connects with the given settings.
     *
     * @param settings where and how to connect
     * @return a client owning its channel; it connects on the first call
     */
    public static SandboxClient connect(ConnectionSettings settings) {
        return new SandboxClient(
                ClientConnection.open(settings, null, null, System.getenv()), ProgressDisplay.fromEnv());
    }

    /**
     * Connects with the settings in the process environment: {@code CHALK_COMPUTE_TARGET}
     * ({@code host:port} or a URL) if set, else {@code CHALK_API_SERVER} (a URL; {@code https} means TLS),
     * else the API server of a {@code chalk login} saved in {@code ~/.chalk.yml}. Calls carry a token
     * from {@code CHALK_CLIENT_ID}/{@code CHALK_CLIENT_SECRET}, {@code CHALK_WEB_IDENTITY_TOKEN_FILE} or
     * that login (a login is for Chalk's API server, so it is not sent to a {@code CHALK_COMPUTE_TARGET}).
     *
     * @return a client owning its channel
     * @throws ai.chalk.compute.error.ChalkComputeException when neither variable is set
     */
    public static SandboxClient fromEnv() {
        return fromEnv(System.getenv());
    }

    /**
     * Connects with the settings in the given environment variables; see {@link #fromEnv()}.
     *
     * @param env environment variables
     * @return a client owning its channel
     * @throws ai.chalk.compute.error.ChalkComputeException when neither variable is set
     */
    public static SandboxClient fromEnv(Map<String, String> env) {
        return new SandboxClient(ClientConnection.fromEnv(env), ProgressDisplay.fromEnv());
    }

    /**
     * Uses a channel you manage (with your own interceptors, credentials, executor). Closing the
     * client does not close the channel.
     *
     * @param channel the channel
     * @return a client that does not own the channel
     */
    public static SandboxClient forChannel(Channel channel) {
        return forChannel(channel, ProgressDisplay.fromEnv());
    }

    /**
     * Uses a channel you manage, showing progress (image builds) on the given display. Closing the client does not
     * close the channel.
     *
     * @param channel  the channel
     * @param progress where long operations show their progress
     * @return a client that does not own the channel
     */
    public static SandboxClient forChannel(Channel channel, ProgressDisplay progress) {
        return forChannel(channel, progress, Optional.empty());
    }

    /**
     * Uses a channel you manage that trusts {@code trustCertificates} (a server with a certificate of its own), so
     * that the dataset and SQL clients this client hands out follow the server's signed links trusting them too.
     * Closing the client does not close the channel.
     *
     * @param channel           the channel
     * @param progress          where long operations show their progress
     * @param trustCertificates the PEM file of certificates the channel trusts, if any
     * @return a client that does not own the channel
     */
    public static SandboxClient forChannel(
            Channel channel, ProgressDisplay progress, Optional<Path> trustCertificates) {
        Objects.requireNonNull(channel, "channel");
        return new SandboxClient(
                ClientConnection.of(channel, Objects.requireNonNull(trustCertificates, "trustCertificates")),
                Objects.requireNonNull(progress, "progress"));
    }

    /** Starts configuring a connection: target, TLS, trusted certificates, bearer token. */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Where this client's long operations (image builds, waiting for replicas) show their progress.
     *
     * @return the display given when connecting, else {@link ProgressDisplay#fromEnv()}
     */
    public ProgressDisplay progress() {
        return progress;
    }

    // ---- volumes ----

    /**
     * The server's volumes: persistent storage that sandboxes mount with
     * {@link SandboxDefinition.Builder#mountVolume(String, String)} and that you read and write directly.
     *
     * @return the volumes, over this client's connection
     */
    public Volumes volumes() {
        ensureOpen();
        return volumes;
    }

    // ---- datasets ----

    /**
     * The datasets of this client's environment: upload tables (CSV, Parquet, rows, Arrow), list them, download their
     * revisions, over this client's connection and credentials.
     *
     * @return the datasets
     */
    public ai.chalk.compute.dataset.DatasetClient datasets() {
        ensureOpen();
        return ai.chalk.compute.dataset.DatasetClient.of(this);
    }

    // ---- evaluations ----

    /**
     * The evaluations of this client's environment: suites, evaluations pinning a dataset to a task and scorers, and
     * their runs, over this client's connection and credentials; runs show their progress on {@link #progress()}.
     *
     * @return the evaluations
     */
    public ai.chalk.compute.evaluation.EvaluationClient evaluations() {
        ensureOpen();
        return ai.chalk.compute.evaluation.EvaluationClient.of(this);
    }

    // ---- snapshots ----

    /**
     * The sandbox snapshots of this client's environment: find, list and delete them. Take one with
     * {@link Sandbox#snapshot()}; start a sandbox from one with {@link Snapshot#restore()} or
     * {@link SandboxDefinition.Builder#snapshot(String)}.
     *
     * @return the snapshots, over this client's connection
     */
    public Snapshots snapshots() {
        ensureOpen();
        return snapshots;
    }

    // ---- secrets ----

    /**
     * The managed secrets of this client's environment: set, list, read and delete them. Sandboxes, scaling groups
     * and functions receive them through {@link ai.chalk.compute.secret.Secret#fromChalkEnv(String)}.
     *
     * @return the secrets, over this client's connection
     */
    public SecretsClient secrets() {
        ensureOpen();
        return secrets;
    }

    /**
     * A client sharing this one's connection whose sandboxes and deployments read local secrets
     * ({@link ai.chalk.compute.secret.Secret#fromLocalEnv(String)}) from {@code environment} instead of this process's
     * environment: for values your application holds, or for tests. Closing it does nothing; close this client.
     *
     * @param environment variable names to values
     * @return the client
     */
    public SandboxClient withLocalEnvironment(Map<String, String> environment) {
        Map<String, String> copy = Map.copyOf(environment);
        return new SandboxClient(this, copy::get, defaults);
    }

    /**
     * A client sharing this one's connection whose sandboxes receive {@code defaults} (a lifetime, tags) where their
     * definition sets none. Closing it does nothing; close this client.
     *
     * <pre>{@code
     * SandboxClient agents = client.withSandboxDefaults(
     *         SandboxDefaults.none().lifetime(Duration.ofMinutes(30)).tag("app", "agent"));
     * }</pre>
     *
     * @param defaults the defaults, replacing this client's
     * @return the client
     */
    public SandboxClient withSandboxDefaults(SandboxDefaults defaults) {
        return new SandboxClient(this, null, Objects.requireNonNull(defaults, "defaults"));
    }

    /**
     * What sandboxes created by this client receive where their definition sets nothing.
     *
     * @return the defaults; {@link SandboxDefaults#none()} unless set with {@link #withSandboxDefaults}
     */
    public SandboxDefaults sandboxDefaults() {
        return defaults;
    }

    // ---- images ----

    /**
     * The server's image builds: build {@link Image}s ahead of time, look up builds and read their logs.
     * {@link #create(SandboxDefinition)} builds through it too.
     *
     * @return the image builds, over this client's connection
     */
    public Images images() {
        ensureOpen();
        return images;
    }

    /**
     * The channel this client's calls go through, for the clients of other services that share it, such as
     * {@code FunctionDeployer}, {@code RemoteFunction} and {@code ScalingGroup}. Closing this client closes it when
     * the client opened it.
     *
     * @return the channel
     */
    @Override
    public Channel channel() {
        return connection.channel();
    }

    /**
     * The PEM file of certificates this client trusts instead of the system's ({@link Builder#trustCertificates}), if
     * any; the dataset and SQL clients it hands out follow the server's signed links trusting them and the system's.
     *
     * @return the file, or empty
     */
    @Override
    public Optional<Path> trustCertificates() {
        return connection.trustCertificates();
    }

    /**
     * The channel queued function calls ({@code RemoteFunction.callAsync}) go over. As in Chalk's SDK, that is the
     * engine {@code CHALK_GRPC_ENGINE} names when it is set; otherwise, for a client with Chalk credentials, the
     * environment's gRPC engine as {@code TeamService.GetEnv} describes it, asked again only when the identity's
     * token is refreshed; otherwise {@link #channel()}.
     *
     * @return the channel, authenticated like {@link #channel()}
     * @throws ai.chalk.compute.error.FailedPreconditionException when the identity may not read its environment and
     *     {@code CHALK_GRPC_ENGINE} is unset
     */
    public Channel queuedCallChannel() {
        return connection.queuedCalls().channel();
    }

    /**
     * The address queued function calls go to; see {@link #queuedCallChannel()}.
     *
     * @return {@code host:port}, or this client's own target
     */
    public String queuedCallTarget() {
        return connection.queuedCalls().target();
    }

    /**
     * Deploys functions and manages their versions through this client; images with build steps are built with
     * {@link #images()}.
     *
     * @return a deployer sharing this client's channel
     */
    public ai.chalk.compute.function.deploy.FunctionDeployer functions() {
        return ai.chalk.compute.function.deploy.FunctionDeployer.of(this);
    }

    // ---- sandboxes ----

    /**
     * Creates a sandbox from the server's default image and waits until it runs; the same as
     * {@code create(Sandbox.builder().build())}.
     *
     * @return the running sandbox; closing it terminates it
     */
    public Sandbox create() {
        return create(Sandbox.builder().build());
    }

    /**
     * Creates a sandbox from an existing image and waits until it runs.
     *
     * @param image an image reference, for example {@code "ubuntu:latest"}
     * @return the running sandbox
     * @deprecated one way to create: {@code create(Sandbox.builder().image(image).build())}
     */
    @Deprecated(since = "0.1.0", forRemoval = true)
    public Sandbox create(String image) {
        return create(Sandbox.builder().image(image).build());
    }

    /**
     * Creates a sandbox from a declarative image and waits until it runs.
     *
     * @param image the image
     * @return the running sandbox
     * @deprecated one way to create: {@code create(Sandbox.builder().image(image).build())}
     */
    @Deprecated(since = "0.1.0", forRemoval = true)
    public Sandbox create(Image image) {
        return create(Sandbox.builder().image(image).build());
    }

    /**
     * Creates a sandbox from the definition a builder describes now; the same as {@code create(definition.build())}.
     *
     * @param definition the sandbox's settings
     * @return the running sandbox; closing it terminates it
     */
    public Sandbox create(SandboxDefinition.Builder definition) {
        return create(Objects.requireNonNull(definition, "definition").build());
    }

    /**
     * Creates a sandbox as defined and waits until it runs. A declarative image is built first (or found, when the
     * server built the same content before), with the build's progress shown; a definition with a snapshot starts
     * from it. The definition is not changed: it can start more sandboxes.
     *
     * <pre>{@code
     * SandboxDefinition definition = Sandbox.builder().cpu("2").memory("4Gi").env("DEBUG", "1").build();
     * try (Sandbox sandbox = client.create(definition)) {
     *     sandbox.exec("echo", "hello");
     * }
     * }</pre>
     *
     * @param definition the sandbox's settings
     * @return the running sandbox; closing it terminates it
     * @throws ai.chalk.compute.error.InvalidRequestException   when the server rejects its settings
     * @throws ai.chalk.compute.error.ImageBuildFailedException when its declarative image could not be built: its
     *                                                          build id and the failing step's output
     * @throws ai.chalk.compute.error.VolumeNotFoundException   when a volume it mounts does not exist
     */
    public Sandbox create(SandboxDefinition definition) {
        Objects.requireNonNull(definition, "definition");
        ensureOpen();
        String workdir = definition.workdir().orElse(null);
        if (definition.snapshot().isPresent()) {
            // only chalk.sandbox.v2 starts from a snapshot
            return new Sandbox(
                    this, calls.createFromSnapshot(definition.snapshot().get()), workdir, List.of());
        }
        // a declarative image is built here first, so that its progress shows and a failure says which step; the
        // create request then finds it built
        definition.declaredImage().ifPresent(images::require);
        CreateSandboxRequest request = definition.toCreateRequest();
        SecretBindings secretBindings = definition.secretBindings();
        if (!secretBindings.isEmpty()
                || definition.chalkIdentity()
                || definition.needsV2(defaults)
                || definition.networkPolicy() != null
                || !definition.credentials().isEmpty()) {
            return createOnV2(definition, request, secretBindings, workdir);
        }
        return new Sandbox(this, calls.create(request), workdir, List.of());
    }

    /**
     * Creates a sandbox through {@code chalk.sandbox.v2} when it has what only v2's spec carries ({@code secret_refs},
     * {@code chalk_workload_identity}, a network policy, lifetime, tags, placement): the server resolves secret
     * references as the sandbox starts and records them, never the values.
     */
    private Sandbox createOnV2(
            SandboxDefinition definition, CreateSandboxRequest request, SecretBindings secretBindings, String workdir) {
        SecretsClient.References refs = secrets.references(secretBindings);
        NetworkSpecs.Compiled network;
        try {
            network = NetworkSpecs.compile(definition.networkPolicy(), definition.credentials(), secrets);
        } catch (RuntimeException e) {
            secrets.forget(refs.uploaded());
            throw e;
        }
        List<String> uploaded = new ArrayList<>(refs.uploaded());
        uploaded.addAll(network.uploaded());
        SandboxInfo info;
        try {
            String image = definition
                    .declaredImage()
                    .map(i -> images.require(i).imageRef())
                    .orElse(request.getImage());
            ai.chalk.compute.proto.container.v1.ChalkContainerSpec.Builder spec =
                    ContainerSpecs.of(request, image, refs.refs(), definition.chalkIdentity()).toBuilder()
                            .putAllEnvVars(network.env());
            network.policy().ifPresent(spec::setNetworkPolicy);
            info = calls.create(definition.withV2Options(spec.build(), defaults));
        } catch (RuntimeException e) {
            secrets.forget(uploaded);
            throw e;
        }
        if (refs.refs().isEmpty()) {
            LoggerFactory.getLogger(SandboxClient.class).info("Sandbox {} created ({})", info.id(), info.state());
        } else {
            LoggerFactory.getLogger(SandboxClient.class)
                    .info(
                            "Sandbox {} created ({}) with {} secret reference(s)",
                            info.id(),
                            info.state(),
                            refs.refs().size());
        }
        return new Sandbox(this, info, workdir, uploaded);
    }

    /**
     * Lists every sandbox that has not terminated, fetching all pages.
     *
     * @return the sandboxes, in the server's order
     */
    public List<SandboxInfo> list() {
        ensureOpen();
        return calls.listAll(ListOptions.defaults());
    }

    /**
     * Lists every sandbox matching the options, fetching all pages from the options' cursor on.
     *
     * <pre>{@code
     * List<SandboxInfo> mine = client.listAll(ListOptions.defaults().tag("team", "search"));
     * }</pre>
     *
     * @param options filters (states, names, tags) and page size
     * @return the sandboxes, in the server's order
     */
    public List<SandboxInfo> listAll(ListOptions options) {
        Objects.requireNonNull(options, "options");
        ensureOpen();
        return calls.listAll(options);
    }

    /**
     * Lists one page of sandboxes.
     *
     * @param options filters, page size and cursor
     * @return the page, with the cursor of the next one
     */
    public SandboxPage list(ListOptions options) {
        Objects.requireNonNull(options, "options");
        ensureOpen();
        return calls.list(options);
    }

    /**
     * A handle to an existing sandbox, with its current information (terminated sandboxes included).
     *
     * @param id the sandbox's id
     * @return the handle
     * @throws ai.chalk.compute.error.SandboxNotFoundException when the server does not know the id
     */
    public Sandbox get(String id) {
        return new Sandbox(this, fetch(Objects.requireNonNull(id, "id")));
    }

    /**
     * A handle to an existing sandbox by id, without asking the server: its first operation does, with
     * this client's credentials. Use it to rebuild a handle someone passed you, such as a function's
     * result; {@link #get(String)} instead checks at once that the sandbox exists.
     *
     * @param id the sandbox's id
     * @return the handle; {@link Sandbox#info()} fetches the sandbox's information on first use
     */
    public Sandbox attach(String id) {
        Objects.requireNonNull(id, "id");
        if (id.isBlank()) {
            throw new IllegalArgumentException("a sandbox id must not be blank");
        }
        ensureOpen();
        return new Sandbox(this, id);
    }

    /**
     * Closes the connection this client opened, waiting briefly for calls in flight; commands
     * still streaming are cancelled. Does not close a channel given to {@link #forChannel(Channel)}.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        connection.close();
    }

    @Override
    public String toString() {
        return "SandboxClient[" + connection + (closed ? ", closed" : "") + "]";
    }

    // ---- used by Sandbox ----

    SandboxInfo fetch(String id) {
        ensureOpen();
        return calls.get(id);
    }

    void terminate(String id, Duration gracePeriod) {
        ensureOpen();
        calls.terminate(id, gracePeriod);
    }

    List<SessionInfo> sessions(String sandboxId) {
        ensureOpen();
        return calls.sessions(sandboxId);
    }

    void suspend(String id) {
        ensureOpen();
        calls.suspend(id);
    }

    void resume(String id) {
        ensureOpen();
        calls.resume(id);
    }

    ExecCall exec(String sandboxId, Command command, boolean closeStdin) {
        ensureOpen();
        return calls.exec(sandboxId, command, closeStdin);
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("this SandboxClient has been closed");
        }
    }

    /**
     * Configures a connection to a server.
     *
     * <pre>{@code
     * SandboxClient client = SandboxClient.builder()
     *         .target("https://compute.example.com")
     *         .bearerToken(token)
     *         .build();
     * }</pre>
     */
    public static final class Builder {
        private String target;
        private Boolean useTls;
        private Path trustCertificates;
        private String bearerToken;
        private ChalkCredentials credentials;
        private TokenSource tokenSource;
        private ProgressDisplay progress;

        private Builder() {}

        /**
         * Where long operations (image builds) show their progress. Default {@link ProgressDisplay#fromEnv()}: stderr,
         * following {@code CHALK_SANDBOX_TUI} and {@code NO_COLOR}.
         *
         * @param progress the display
         * @return this builder
         */
        public Builder progress(ProgressDisplay progress) {
            this.progress = Objects.requireNonNull(progress, "progress");
            return this;
        }

        /**
         * Authenticates every call with a token obtained from these credentials (client id and
         * secret exchanged with the API server, or a rotating token file), refreshed as needed.
         *
         * @param credentials e.g. {@link ChalkCredentials#fromEnv()} or {@link ChalkCredentials#ofClientCredentials}
         * @return this builder
         */
        public Builder credentials(ChalkCredentials credentials) {
            this.credentials = Objects.requireNonNull(credentials, "credentials");
            return this;
        }

        /**
         * Authenticates every call with tokens from a source you manage (and close).
         *
         * @param tokenSource the source
         * @return this builder
         */
        public Builder tokenSource(TokenSource tokenSource) {
            this.tokenSource = Objects.requireNonNull(tokenSource, "tokenSource");
            return this;
        }

        /**
         * The server's address: {@code host:port}, or a URL {@code https://host[:port]} (TLS) or
         * {@code http://host[:port]}.
         *
         * @param target the address
         * @return this builder
         */
        public Builder target(String target) {
            this.target = Objects.requireNonNull(target, "target");
            return this;
        }

        /**
         * Whether to use TLS, overriding what the target's scheme implies.
         *
         * @param useTls {@code true} for TLS
         * @return this builder
         */
        public Builder useTls(boolean useTls) {
            this.useTls = useTls;
            return this;
        }

        /**
         * Trusts the certificates in a PEM file instead of the system's; implies TLS unless
         * {@link #useTls(boolean)} says otherwise.
         *
         * @param pem a PEM file of CA or server certificates
         * @return this builder
         */
        public Builder trustCertificates(Path pem) {
            this.trustCertificates = Objects.requireNonNull(pem, "pem");
            return this;
        }

        /**
         * Sends {@code authorization: Bearer <token>} with every call.
         *
         * @param token the token
         * @return this builder
         */
        public Builder bearerToken(String token) {
            this.bearerToken = Objects.requireNonNull(token, "token");
            return this;
        }

        /** The connection settings this builder describes. */
        public ConnectionSettings settings() {
            if (target == null) {
                throw new IllegalStateException("no target set: call target(\"host:port\") first");
            }
            ConnectionSettings settings = ConnectionSettings.forTarget(target);
            if (trustCertificates != null) {
                settings = settings.withTrustCertificates(trustCertificates);
            }
            if (useTls != null) {
                settings = settings.withTls(useTls);
            }
            if (bearerToken != null) {
                settings = settings.withBearerToken(bearerToken);
            }
            return settings;
        }

        /** Opens the client; it connects on the first call. */
        public SandboxClient build() {
            int ways = (bearerToken != null ? 1 : 0) + (credentials != null ? 1 : 0) + (tokenSource != null ? 1 : 0);
            if (ways > 1) {
                throw new IllegalStateException("choose one of bearerToken, credentials and tokenSource");
            }
            TokenSource owned = credentials != null ? TokenSource.from(credentials) : null;
            TokenSource tokens = tokenSource != null ? tokenSource : owned;
            return new SandboxClient(
                    ClientConnection.open(settings(), tokens, owned, System.getenv()),
                    progress != null ? progress : ProgressDisplay.fromEnv());
        }
    }
}
