package ai.chalk.compute.autoconfigure;

import ai.chalk.compute.connection.ConnectionSettings;
import ai.chalk.compute.sandbox.SandboxDefaults;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Settings of Chalk Compute under {@code chalk.compute}.
 *
 * <p>With nothing set, an embedded server runs inside the application (in-process transport, no
 * port opened), so a {@code SandboxClient} works in a unit test with no setup. Set
 * {@code chalk.compute.target} to use a remote server instead:
 * <pre>
 * chalk:
 *   compute:
 *     target: https://compute.example.com
 *     client-id: ${MY_CLIENT_ID}
 *     client-secret: ${MY_CLIENT_SECRET}
 * </pre>
 *
 * <p>The Chalk SDK's environment variables ({@code CHALK_CLIENT_ID}, {@code CHALK_CLIENT_SECRET},
 * {@code CHALK_API_SERVER}, {@code CHALK_ENVIRONMENT}, {@code CHALK_WEB_IDENTITY_TOKEN_FILE},
 * {@code CHALK_SANDBOX_TUI}, {@code NO_COLOR}) and {@code ~/.chalk.yml} are read as the SDK reads them;
 * a value set here wins over both.
 */
@ConfigurationProperties(ChalkComputeProperties.PREFIX)
public class ChalkComputeProperties {

    /** The prefix of every Chalk Compute property. */
    public static final String PREFIX = "chalk.compute";

    /**
     * A remote Chalk Compute server, as host:port (plaintext) or as a URL (https:// uses TLS). It may
     * also name a channel configured under spring.grpc.client.channels. Like every chalk.compute property it
     * can come from the environment (CHALK_COMPUTE_TARGET), with Spring Boot's usual precedence.
     * Unset: the embedded server.
     */
    private String target;

    /**
     * Chalk's API server, which exchanges the client id and secret for a token (it does not by itself make
     * the client remote: set target for that). Default: CHALK_API_SERVER, ~/.chalk.yml, then https://api.chalk.ai.
     */
    private String apiServer;

    /** The client id exchanged for a token with the client secret. Default: CHALK_CLIENT_ID, then ~/.chalk.yml. */
    private String clientId;

    /** The client secret. Default: CHALK_CLIENT_SECRET, then ~/.chalk.yml. */
    private String clientSecret;

    /** The Chalk environment to work in. Default: CHALK_ENVIRONMENT, the token's environment_id claim, ~/.chalk.yml. */
    private String environment;

    /** A file holding a rotating Chalk JWT (workload identity), used instead of a client id and secret. Default: CHALK_WEB_IDENTITY_TOKEN_FILE. */
    private Path identityTokenFile;

    /**
     * Whether to show the progress of long operations on stderr (function deployments, image builds), as the SDK
     * does: auto, true or false. Default: CHALK_SANDBOX_TUI, else auto (shown). While shown, these events are logged
     * at DEBUG only; when not, at INFO. Sandbox lifecycles are not shown (a sandbox per request would flood the
     * console): with OpenTelemetry they are spans, and the chalkcompute endpoint lists the sandboxes.
     */
    private Tui tui = Tui.AUTO;

    /** Whether progress is coloured: auto (interactive terminals only, never with NO_COLOR, TERM=dumb or CI), always or never. */
    private Color color = Color.AUTO;

    private final Tls tls = new Tls();

    private final Embedded embedded = new Embedded();

    private final Local local = new Local();

    private final Functions functions = new Functions();

    private final Sandbox sandbox = new Sandbox();

    public String getTarget() {
        return target;
    }

    public void setTarget(String target) {
        if (target != null && !target.isBlank()) {
            ConnectionSettings.forTarget(target); // fails binding with the property's name when unreadable
        }
        this.target = target == null || target.isBlank() ? null : target.strip();
    }

    /** Whether a remote target is set. */
    public boolean hasTarget() {
        return target != null;
    }

    public String getApiServer() {
        return apiServer;
    }

    public void setApiServer(String apiServer) {
        if (apiServer != null && !apiServer.isBlank() && !apiServer.contains("://")) {
            throw new IllegalArgumentException("must be a URL such as https://api.chalk.ai, got: " + apiServer);
        }
        this.apiServer = apiServer == null || apiServer.isBlank() ? null : apiServer.strip();
    }

    public String getClientId() {
        return clientId;
    }

    public void setClientId(String clientId) {
        this.clientId = clientId;
    }

    public String getClientSecret() {
        return clientSecret;
    }

    public void setClientSecret(String clientSecret) {
        this.clientSecret = clientSecret;
    }

    public String getEnvironment() {
        return environment;
    }

    public void setEnvironment(String environment) {
        this.environment = environment;
    }

    public Path getIdentityTokenFile() {
        return identityTokenFile;
    }

    public void setIdentityTokenFile(Path identityTokenFile) {
        this.identityTokenFile = identityTokenFile;
    }

    public Tui getTui() {
        return tui;
    }

    public void setTui(Tui tui) {
        this.tui = tui;
    }

    public Color getColor() {
        return color;
    }

    public void setColor(Color color) {
        this.color = color;
    }

    public Tls getTls() {
        return tls;
    }

    public Embedded getEmbedded() {
        return embedded;
    }

    public Local getLocal() {
        return local;
    }

    public Functions getFunctions() {
        return functions;
    }

    public Sandbox getSandbox() {
        return sandbox;
    }

    /** What every sandbox the application's {@code SandboxClient} creates receives unless its definition sets its own. */
    public static class Sandbox {

        /**
         * How long a sandbox may run when its definition sets no lifetime: the server terminates it when this much time
         * has passed since it was created. Unset: the server's maximum.
         */
        private Duration defaultLifetime;

        /** Tags every sandbox receives (a definition's own tag of the same key wins), to list the application's sandboxes by tag. */
        private Map<String, String> defaultTags = new LinkedHashMap<>();

        public Duration getDefaultLifetime() {
            return defaultLifetime;
        }

        public void setDefaultLifetime(Duration defaultLifetime) {
            if (defaultLifetime != null && (defaultLifetime.isNegative() || defaultLifetime.isZero())) {
                throw new IllegalArgumentException("must be a positive duration, got " + defaultLifetime);
            }
            this.defaultLifetime = defaultLifetime;
        }

        public Map<String, String> getDefaultTags() {
            return defaultTags;
        }

        public void setDefaultTags(Map<String, String> defaultTags) {
            this.defaultTags = defaultTags == null ? new LinkedHashMap<>() : new LinkedHashMap<>(defaultTags);
        }

        /** These settings as the SDK's defaults. */
        public SandboxDefaults toDefaults() {
            SandboxDefaults defaults = SandboxDefaults.none().tags(defaultTags);
            return defaultLifetime == null ? defaults : defaults.lifetime(defaultLifetime);
        }
    }

    /** TLS to the remote target. */
    public static class Tls {

        /** Whether to use TLS. Unset: as the target says (https:// means TLS, host:port means plaintext); true when trust-certificates is set. */
        private Boolean enabled;

        /** A PEM file of CA or server certificates to trust instead of the system's (implies TLS). */
        private Path trustCertificates;

        public Boolean getEnabled() {
            return enabled;
        }

        public void setEnabled(Boolean enabled) {
            this.enabled = enabled;
        }

        public Path getTrustCertificates() {
            return trustCertificates;
        }

        public void setTrustCertificates(Path trustCertificates) {
            this.trustCertificates = trustCertificates;
        }
    }

    /** The server embedded in the application. */
    public static class Embedded {

        /** Whether to run the embedded server: auto (when the server module is present and no target is set), true, or false. */
        private Switch enabled = Switch.AUTO;

        /**
         * The sandbox runtime: local (the default: namespaces, no daemon), docker, or auto (docker when an engine
         * answers, else local).
         */
        private Runtime runtime = Runtime.LOCAL;

        /** Also serve over TCP on this port of 127.0.0.1 (0 = a free port). Unset: in-process only, no port opened. */
        private Integer port;

        /**
         * Whether TCP clients of the embedded server must show a token (tokens: the default; the first credential is
         * written to the data directory's credentials.yml) or are all trusted (none). The application itself, served
         * in-process, never needs one.
         */
        private Auth auth = Auth.TOKENS;

        /** Where the embedded server keeps its state. Unset: a fresh temporary directory, deleted at shutdown. */
        private Path dataDir;

        public Switch getEnabled() {
            return enabled;
        }

        public void setEnabled(Switch enabled) {
            this.enabled = enabled;
        }

        public Runtime getRuntime() {
            return runtime;
        }

        public void setRuntime(Runtime runtime) {
            this.runtime = runtime;
        }

        public Integer getPort() {
            return port;
        }

        public Auth getAuth() {
            return auth;
        }

        public void setAuth(Auth auth) {
            this.auth = auth;
        }

        public void setPort(Integer port) {
            if (port != null && (port < 0 || port > 65535)) {
                throw new IllegalArgumentException("port " + port + " is out of range 0-65535");
            }
            this.port = port;
        }

        public Path getDataDir() {
            return dataDir;
        }

        public void setDataDir(Path dataDir) {
            this.dataDir = dataDir;
        }
    }

    /** The local runtime of the embedded server. */
    public static class Local {

        /** How sandboxes are isolated: auto (the best the host offers), required (refuse to start without namespaces), none (plain processes). */
        private Isolation isolation = Isolation.AUTO;

        /** Sandboxes kept started ahead of time for each recently created spec, so that a create is a hand-over; 0 for none. */
        private int poolSize = 2;

        public Isolation getIsolation() {
            return isolation;
        }

        public void setIsolation(Isolation isolation) {
            this.isolation = isolation;
        }

        public int getPoolSize() {
            return poolSize;
        }

        public void setPoolSize(int poolSize) {
            this.poolSize = poolSize;
        }
    }

    /** The application's {@code @ChalkFunction}, {@code @ChalkScorer} and {@code @ChalkClass} beans. */
    public static class Functions {

        /** Whether to discover the application's annotated beans at startup and show them in health and the chalkfunctions endpoint. */
        private boolean enabled = true;

        /**
         * Whether this application runs as a function worker: set by the worker (CHALK_WORKER=spring:MainClass), which
         * boots the application without a web server or embedded server to serve its beans' functions. Not set by hand.
         */
        private boolean worker;

        /** Whether to deploy the discovered functions in the background at startup, to the server the application's client uses. */
        private boolean deploy = true;

        /** Whether startup waits for every function's deployment to finish (deployed or failed), up to wait-timeout. */
        private boolean waitOnStartup;

        /** How long startup waits for deployments with wait-on-startup or deploy-only. */
        private Duration waitTimeout = Duration.ofMinutes(10);

        /** How many functions deploy at once. */
        private int deployConcurrency = 4;

        /**
         * Whether the application only deploys its functions, for CI: it waits for every deployment, prints a
         * summary and exits with status 0 when all are deployed, 1 when any failed or did not finish in wait-timeout.
         */
        private boolean deployOnly;

        private final Retry retry = new Retry();

        /** How a deployment that could not reach the server (UNAVAILABLE, DEADLINE_EXCEEDED, ...) is tried again. */
        public Retry getRetry() {
            return retry;
        }

        public boolean isDeploy() {
            return deploy;
        }

        public void setDeploy(boolean deploy) {
            this.deploy = deploy;
        }

        public boolean isWaitOnStartup() {
            return waitOnStartup;
        }

        public void setWaitOnStartup(boolean waitOnStartup) {
            this.waitOnStartup = waitOnStartup;
        }

        public Duration getWaitTimeout() {
            return waitTimeout;
        }

        public void setWaitTimeout(Duration waitTimeout) {
            if (waitTimeout == null || waitTimeout.isNegative() || waitTimeout.isZero()) {
                throw new IllegalArgumentException("must be a positive duration, got " + waitTimeout);
            }
            this.waitTimeout = waitTimeout;
        }

        public int getDeployConcurrency() {
            return deployConcurrency;
        }

        public void setDeployConcurrency(int deployConcurrency) {
            if (deployConcurrency < 1) {
                throw new IllegalArgumentException("must be at least 1, got " + deployConcurrency);
            }
            this.deployConcurrency = deployConcurrency;
        }

        public boolean isDeployOnly() {
            return deployOnly;
        }

        public void setDeployOnly(boolean deployOnly) {
            this.deployOnly = deployOnly;
        }

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public boolean isWorker() {
            return worker;
        }

        public void setWorker(boolean worker) {
            this.worker = worker;
        }
    }

    /**
     * Retries of a function's deployment that failed for want of a server: the application started before its
     * server, or the server restarted. Each retry waits twice as long as the one before, from initial-backoff up to
     * max-backoff, for as long as the application runs; a deployment the server refused (a bad image, a secret
     * that does not exist) is not retried. {@code POST /actuator/chalkfunctions} redeploys at once.
     */
    public static class Retry {

        /** Whether a deployment that could not reach the server is tried again. */
        private boolean enabled = true;

        /** How long the first retry waits. */
        private Duration initialBackoff = Duration.ofSeconds(1);

        /** The longest wait between two tries. */
        private Duration maxBackoff = Duration.ofSeconds(30);

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public Duration getInitialBackoff() {
            return initialBackoff;
        }

        public void setInitialBackoff(Duration initialBackoff) {
            if (initialBackoff == null || initialBackoff.isNegative() || initialBackoff.isZero()) {
                throw new IllegalArgumentException("must be a positive duration, got " + initialBackoff);
            }
            this.initialBackoff = initialBackoff;
        }

        public Duration getMaxBackoff() {
            return maxBackoff;
        }

        public void setMaxBackoff(Duration maxBackoff) {
            if (maxBackoff == null || maxBackoff.isNegative() || maxBackoff.isZero()) {
                throw new IllegalArgumentException("must be a positive duration, got " + maxBackoff);
            }
            this.maxBackoff = maxBackoff;
        }
    }

    /** Whether progress is shown. */
    public enum Tui {
        /** As {@code CHALK_SANDBOX_TUI} says; shown when it is unset. */
        AUTO,
        /** Shown. */
        TRUE,
        /** Not shown; the same events are logged at INFO by {@code ai.chalk.compute.progress.ProgressDisplay}. */
        FALSE
    }

    /** Whether progress is coloured. */
    public enum Color {
        /** On interactive terminals only, and never with {@code NO_COLOR}, {@code TERM=dumb} or {@code CI}. */
        AUTO,
        /** Always, even into a file or pipe. */
        ALWAYS,
        /** Never. */
        NEVER
    }

    /** An auto / true / false switch. */
    /** Whether TCP clients of the embedded server must show a token. */
    public enum Auth {
        /** Bearer tokens exchanged for a client credential (the default). */
        TOKENS,
        /** Every TCP client is trusted: the port is served on loopback only. */
        NONE
    }

    public enum Switch {
        /** Decided from the context. */
        AUTO,
        /** On. */
        TRUE,
        /** Off. */
        FALSE
    }

    /**
     * The embedded server's sandbox runtime: the server's {@code RuntimeChoice}, by name. A type of its own because the
     * server is an optional dependency, and these properties bind without it.
     */
    public enum Runtime {
        /** Docker when an engine answers within two seconds, else local. */
        AUTO,
        /** Processes in namespaces on this machine, daemonless. */
        LOCAL,
        /** A Docker Engine ({@code DOCKER_HOST} or the local socket). */
        DOCKER
    }

    /** Isolation choices of the local runtime: the server's {@code LocalIsolation}, by name (see {@link Runtime}). */
    public enum Isolation {
        /** The best the host offers, said loudly when it is none. */
        AUTO,
        /** Namespaces or refuse to start. */
        REQUIRED,
        /** Plain processes. */
        NONE
    }
}
