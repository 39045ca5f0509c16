package ai.chalk.compute.server.cli;

import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.DockerRuntimeOptions;
import ai.chalk.compute.server.LocalRuntimeOptions;
import ai.chalk.compute.server.RuntimeChoice;
import ai.chalk.compute.server.RuntimeOptions;
import ai.chalk.compute.server.auth.Authentication;
import ai.chalk.compute.server.egress.EgressOptions;
import ai.chalk.compute.server.grpc.ListenAddress;
import ai.chalk.compute.server.runtime.local.LocalIsolation;
import ai.chalk.compute.server.runtime.local.LocalRuntime;
import ai.chalk.compute.server.runtime.local.SandboxDefaults;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** Runs a self-hosted Chalk Compute server until SIGTERM or SIGINT. */
@Command(
        name = "chalk-compute-server",
        mixinStandardHelpOptions = true,
        subcommands = CredentialsCommand.class,
        description = "Serves Chalk's sandbox gRPC contract on this machine.")
public final class ServerMain implements Callable<Integer> {

    @Option(names = "--port", description = "TCP port to listen on (0 picks a free one). Default: ${DEFAULT-VALUE}.")
    int port = 50051;

    @Option(
            names = "--host",
            description =
                    "Address to bind. Default: ${DEFAULT-VALUE} (this machine only). Another address needs authentication on; serve it with --tls-cert so tokens are not sent in the clear.")
    String host = "127.0.0.1";

    @Option(
            names = "--auth",
            description =
                    "TCP callers show a token (tokens: clients exchange a credential from `credentials create`, or the first one in <data-dir>/credentials.yml) or are all trusted (none: loopback only). Default: ${DEFAULT-VALUE}.")
    String auth = "tokens";

    @Option(
            names = "--http-port",
            description =
                    "HTTP port: the JWKS that verifies the server's tokens (/.well-known/jwks.json) and the signed links that upload and download dataset files and query results (/transfers/); HTTPS with --tls-cert. Default: --port plus one, a free port with --port 0.")
    Integer httpPort;

    @Option(
            names = "--transfer-link-ttl",
            description =
                    "How long a signed upload or download link of the HTTP port lives, ISO-8601 (PT1H) or seconds; whoever holds one may use it until then. Default: PT1H.")
    String transferLinkTtl = "PT1H";

    @Option(
            names = "--data-dir",
            description = "Where state lives (database, sandbox layers). Default: ~/.chalk-compute.")
    Path dataDir = Path.of(System.getProperty("user.home"), ".chalk-compute");

    @Option(
            names = "--runtime",
            description =
                    "Sandbox runtime: local, docker, or auto (docker when an engine answers). Default: ${DEFAULT-VALUE}.")
    String runtime = "local";

    @Option(
            names = "--docker-host",
            description =
                    "Docker Engine for --runtime docker, e.g. unix:///var/run/docker.sock. Default: DOCKER_HOST or the local socket.")
    String dockerHost;

    @Option(names = "--docker-default-image", description = "Image of docker sandboxes created without one.")
    String dockerDefaultImage;

    @Option(
            names = "--worker-image",
            description =
                    "Image function workers run in on --runtime docker: a JRE (Java 17+, java on the PATH). Default: eclipse-temurin:<the server's Java release>-jre; ci/build-test-images.sh jre builds chalk-compute-test/jre:17 from Debian packages.")
    String workerImage;

    @Option(
            names = "--oci-dir",
            description =
                    "Directory of OCI image layouts and archives the local runtime runs as oci:NAME[:TAG] and oci-archive:NAME[:TAG]. Default: <data-dir>/runtime/local/oci.")
    java.nio.file.Path ociDir;

    @Option(
            names = "--isolation",
            description = "Local runtime isolation: ${COMPLETION-CANDIDATES}. Default: ${DEFAULT-VALUE}.")
    LocalIsolation isolation = LocalIsolation.AUTO;

    @Option(
            names = "--sandbox-lifetime",
            description = "Longest a sandbox may run, ISO-8601 (PT1H) or seconds. Default: PT1H.")
    String lifetime = "PT1H";

    @Option(
            names = "--sandbox-memory",
            description =
                    "Memory of a sandbox that sets no limit (its file system counts too), e.g. 4Gi. Default: 4Gi.")
    String sandboxMemory = "4Gi";

    @Option(names = "--sandbox-disk", description = "Size of a local sandbox's writable layer, e.g. 4Gi. Default: 4Gi.")
    String sandboxDisk = "4Gi";

    @Option(
            names = "--volume-size",
            description = "Size of each volume's file system (sparse), e.g. 16Gi. Default: 16Gi.")
    String volumeSize = "16Gi";

    @Option(
            names = "--disk-reserve",
            description = "How much of its disk the server keeps free of what tenants make it write (uploads, code"
                    + " unpacked for deploys, snapshots), e.g. 5Gi. Default: 1Gi or 2% of the disk, the larger.")
    String diskReserve;

    @Option(
            names = "--blob-storage-per-environment",
            description = "The most bytes of blobs (datasets, function code, SQL results, files) one environment may"
                    + " store, e.g. 50Gi; what nothing refers to stops counting after --unused-blobs-kept-for."
                    + " Default: half of what the disk holds above its reserve.")
    String blobStoragePerEnvironment;

    @Option(
            names = "--unused-blobs-kept-for",
            description = "How long a blob nothing refers to (code of deleted function versions, files of deleted"
                    + " datasets, results of forgotten queries, uploads never used) is kept after its environment last"
                    + " stored it or asked about it, ISO-8601 (PT24H) or seconds; then it no longer counts against the"
                    + " environment's blob storage, and is deleted once no environment holds it. At least PT1H;"
                    + " default: PT24H.")
    String unusedBlobsKeptFor = "PT24H";

    @Option(
            names = "--sandbox-pids",
            description = "Processes and threads one local sandbox may have. Default: ${DEFAULT-VALUE}.")
    long sandboxPids = SandboxDefaults.STANDARD.pidsMax();

    @Option(
            names = "--max-sandboxes",
            description = "Sandboxes running at once, function replicas included (local and docker runtimes); more are"
                    + " refused, and one environment runs at most half of them. Default: ${DEFAULT-VALUE}.")
    int maxSandboxes = SandboxDefaults.STANDARD.maxSandboxes();

    @Option(
            names = "--max-running-commands",
            description = "Commands clients may run at once (execs, one-shot commands, sessions); one environment runs"
                    + " at most half of them. Default: ${DEFAULT-VALUE}.")
    int maxRunningCommands = ai.chalk.compute.server.exec.RunningCommands.DEFAULT_LIMIT;

    @Option(
            names = "--max-calls-in-flight",
            description =
                    "Unary and server-streaming calls the TCP port and the replicas' socket take at once (each may"
                            + " hold a server thread); one environment has at most half of them under way. Default:"
                            + " ${DEFAULT-VALUE}.")
    int maxCallsInFlight = ai.chalk.compute.server.grpc.CallsInFlight.DEFAULT_LIMIT;

    @Option(
            names = "--max-connections",
            description = "TCP connections the server keeps open at once (each holds a file descriptor); more are"
                    + " closed as soon as they are accepted. Default: ${DEFAULT-VALUE}.")
    int maxConnections = ai.chalk.compute.server.grpc.OpenConnections.DEFAULT_LIMIT;

    @Option(
            names = "--max-connections-per-address",
            description = "Of those, the most one address keeps open (an IPv6 one by its /64). Default:"
                    + " ${DEFAULT-VALUE}.")
    int maxConnectionsPerAddress = ai.chalk.compute.server.grpc.OpenConnections.DEFAULT_PER_ADDRESS;

    @Option(
            names = "--sandbox-pool",
            description = "Local sandboxes kept started ahead of time for each recently created spec, so that a create"
                    + " is a hand-over; 0 for none. Default: ${DEFAULT-VALUE}.")
    int sandboxPool = LocalRuntimeOptions.DEFAULT_POOL_SIZE;

    @Option(
            names = "--tls-cert",
            description =
                    "PEM certificate chain: serve the port, and the HTTP port, with TLS (needs --tls-key); its names must cover --host, which the HTTP port's links name (127.0.0.1 for 0.0.0.0 or ::).")
    Path tlsCert;

    @Option(names = "--tls-key", description = "PEM private key of --tls-cert.")
    Path tlsKey;

    @Option(
            names = "--secrets-key-file",
            description =
                    "Key that encrypts secrets at rest: 32 random bytes in base64 (openssl rand -base64 32), mode 0600. Default: <data-dir>/secrets.key, made on first start.")
    Path secretsKeyFile;

    @Option(
            names = "--ai-endpoint",
            description =
                    "OpenAI-compatible base URL (e.g. https://api.openai.com/v1) the AI router forwards LLM judges' requests to, adding the key of --ai-api-key-file; applications and workers never see the key.")
    java.net.URI aiEndpoint;

    @Option(
            names = "--ai-api-key-file",
            description = "File holding the API key of --ai-endpoint (read at each request).")
    Path aiApiKeyFile;

    @Option(
            names = "--egress-host",
            description =
                    "NAME=ADDRESS[,ADDRESS...]: how the egress proxy of sandboxes with a network policy resolves NAME, before the system resolver (split DNS); repeatable.")
    List<String> egressHosts = new ArrayList<>();

    @Option(
            names = "--egress-ca",
            description =
                    "PEM file of further CAs the egress proxy trusts, besides the JDK's, when it decrypts requests to a host with rules (a TLS-inspecting gateway's).")
    Path egressCa;

    private final CountDownLatch stopped = new CountDownLatch(1);

    /** The egress proxy's options from {@code --egress-host} and {@code --egress-ca}. */
    private EgressOptions egressOptions() {
        EgressOptions options = EgressOptions.DEFAULTS;
        for (String entry : egressHosts) {
            int eq = entry.indexOf('=');
            if (eq <= 0) {
                throw new CommandLine.ParameterException(
                        new CommandLine(this), "--egress-host " + entry + ": expected NAME=ADDRESS[,ADDRESS...]");
            }
            List<InetAddress> addresses = new ArrayList<>();
            for (String a : entry.substring(eq + 1).split(",")) {
                try {
                    addresses.add(ai.chalk.compute.server.runtime.network.Prefix.parse(a.strip())
                            .address());
                } catch (IllegalArgumentException e) {
                    throw new CommandLine.ParameterException(
                            new CommandLine(this), "--egress-host " + entry + ": " + a + " is not an IP address");
                }
            }
            options = options.withHost(entry.substring(0, eq).strip(), addresses.toArray(InetAddress[]::new));
        }
        if (egressCa != null) {
            if (!Files.isReadable(egressCa)) {
                throw new CommandLine.ParameterException(
                        new CommandLine(this), "--egress-ca " + egressCa + " is not a readable file");
            }
            options = options.withUpstreamTrust(egressCa);
        }
        return options;
    }

    public static void main(String[] args) {
        if (System.getProperty("logback.configurationFile") == null) {
            // the server jar must not ship a plain logback.xml: an embedding application would pick it up
            System.setProperty("logback.configurationFile", "chalk-compute-server-logback.xml");
        }
        System.exit(new CommandLine(new ServerMain())
                .setCaseInsensitiveEnumValuesAllowed(true)
                .execute(args));
    }

    @Override
    public Integer call() throws Exception {
        RuntimeChoice runtimeChoice;
        Authentication.Mode authMode;
        try {
            authMode = parseAuth(auth);
            ListenAddress.check(host, port, authMode == Authentication.Mode.TOKENS, tlsCert != null);
            runtimeChoice = RuntimeChoice.parse(runtime);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(new CommandLine(this), e.getMessage());
        }
        ComputeServer.Builder settings = ComputeServer.builder()
                .dataDir(dataDir)
                .host(host)
                .auth(authMode)
                .port(port)
                .sandboxLifetime(parseDuration("--sandbox-lifetime", lifetime))
                .transferLinkTtl(parseDuration("--transfer-link-ttl", transferLinkTtl));
        try {
            settings.unusedBlobsKeptFor(parseDuration("--unused-blobs-kept-for", unusedBlobsKeptFor));
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(
                    new CommandLine(this), "--unused-blobs-kept-for \"" + unusedBlobsKeptFor + "\": " + e.getMessage());
        }
        LocalRuntimeOptions.Builder local = LocalRuntimeOptions.builder()
                .isolation(isolation)
                .ociImportDir(ociDir)
                .dockerHost(dockerHost);
        try {
            local.defaults(new SandboxDefaults(
                    parseBytes("--sandbox-memory", sandboxMemory),
                    parseBytes("--sandbox-disk", sandboxDisk),
                    sandboxPids,
                    SandboxDefaults.STANDARD.openFiles(),
                    maxSandboxes));
            if (sandboxPool < 0 || sandboxPool > LocalRuntime.MAX_POOL_SIZE) {
                throw new IllegalArgumentException(
                        "--sandbox-pool must be between 0 and " + LocalRuntime.MAX_POOL_SIZE + ", not " + sandboxPool);
            }
            local.poolSize(sandboxPool);
            settings.volumeSize(parseBytes("--volume-size", volumeSize));
            settings.maxRunningCommands(maxRunningCommands);
            settings.maxCallsInFlight(maxCallsInFlight);
            settings.maxConnections(maxConnections, maxConnectionsPerAddress);
            if (diskReserve != null) {
                settings.diskReserve(parseBytes("--disk-reserve", diskReserve));
            }
            if (blobStoragePerEnvironment != null) {
                settings.blobStoragePerEnvironment(
                        parseBytes("--blob-storage-per-environment", blobStoragePerEnvironment));
            }
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(new CommandLine(this), e.getMessage());
        }
        DockerRuntimeOptions docker = DockerRuntimeOptions.builder()
                .maxSandboxes(maxSandboxes)
                .sandboxMemory(parseBytes("--sandbox-memory", sandboxMemory)) // checked above
                .host(dockerHost)
                .defaultImage(dockerDefaultImage)
                .workerImage(workerImage)
                .build();
        settings.runtime(RuntimeOptions.of(runtimeChoice, local.build(), docker));
        settings.egress(egressOptions());
        if (httpPort != null) {
            settings.httpPort(httpPort);
        }
        if ((tlsCert == null) != (tlsKey == null)) {
            throw new CommandLine.ParameterException(new CommandLine(this), "--tls-cert and --tls-key go together");
        }
        if (tlsCert != null) {
            settings.tls(tlsCert, tlsKey);
        }
        if (secretsKeyFile != null) {
            settings.secretsKeyFile(secretsKeyFile);
        }
        if (aiApiKeyFile != null && aiEndpoint == null) {
            throw new CommandLine.ParameterException(new CommandLine(this), "--ai-api-key-file needs --ai-endpoint");
        }
        if (aiEndpoint != null) {
            try {
                settings.aiRouter(new ai.chalk.compute.server.ai.AiRouterOptions(aiEndpoint, aiApiKeyFile));
            } catch (IllegalArgumentException e) {
                throw new CommandLine.ParameterException(new CommandLine(this), e.getMessage());
            }
            if (aiApiKeyFile != null && !java.nio.file.Files.isReadable(aiApiKeyFile)) {
                throw new CommandLine.ParameterException(
                        new CommandLine(this), "--ai-api-key-file " + aiApiKeyFile + " cannot be read");
            }
        }
        ComputeServer server = settings.build().start();
        Runtime.getRuntime()
                .addShutdownHook(new Thread(
                        () -> {
                            server.close();
                            stopped.countDown();
                        },
                        "chalk-compute-shutdown"));
        stopped.await();
        return 0;
    }

    /** {@code tokens} or {@code none}, any case. */
    static Authentication.Mode parseAuth(String value) {
        String v = value == null ? "" : value.strip().toUpperCase(java.util.Locale.ROOT);
        for (Authentication.Mode m : Authentication.Mode.values()) {
            if (m.name().equals(v)) {
                return m;
            }
        }
        throw new IllegalArgumentException("unknown --auth \"" + value + "\": choose tokens or none");
    }

    /** {@code 4Gi}, {@code 512Mi}, {@code 64Ki} or a number of bytes. */
    static long parseBytes(String option, String value) {
        java.util.regex.Matcher m =
                java.util.regex.Pattern.compile("^([0-9]+)(Ki|Mi|Gi|Ti)?$").matcher(value.trim());
        if (!m.matches()) {
            throw new IllegalArgumentException(option + " \"" + value + "\": use a size such as 4Gi, 512Mi or 1048576");
        }
        int shift = m.group(2) == null
                ? 0
                : switch (m.group(2)) {
                    case "Ki" -> 10;
                    case "Mi" -> 20;
                    case "Gi" -> 30;
                    default -> 40;
                };
        return Math.multiplyExact(Long.parseLong(m.group(1)), 1L << shift);
    }

    private static Duration parseDuration(String flag, String value) {
        Duration d;
        try {
            d = value.matches("\\d+") ? Duration.ofSeconds(Long.parseLong(value)) : Duration.parse(value);
        } catch (RuntimeException e) {
            throw new CommandLine.ParameterException(
                    new CommandLine(new ServerMain()),
                    flag + " \"" + value + "\" is not a duration: give seconds (3600) or ISO-8601 (PT1H)");
        }
        if (d.isNegative() || d.isZero()) {
            throw new CommandLine.ParameterException(
                    new CommandLine(new ServerMain()), flag + " \"" + value + "\" must be positive");
        }
        return d;
    }
}
