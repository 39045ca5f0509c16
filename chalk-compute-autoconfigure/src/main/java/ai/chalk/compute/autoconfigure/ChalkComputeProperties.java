package ai.chalk.compute.autoconfigure;

import java.nio.file.Path;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Settings of Chalk Compute under {@code chalk.compute}. With no {@code target}, an embedded
 * server runs inside the application (in-process transport), so nothing needs configuring.
 */
@ConfigurationProperties("chalk.compute")
public class ChalkComputeProperties {

    /** A remote server, as host:port or URL (https:// uses TLS). Unset: use the embedded server. */
    private String target;

    private final Embedded embedded = new Embedded();

    private final Local local = new Local();

    public String getTarget() {
        return target;
    }

    public void setTarget(String target) {
        this.target = target;
    }

    public Embedded getEmbedded() {
        return embedded;
    }

    public Local getLocal() {
        return local;
    }

    /** The server embedded in the application. */
    public static class Embedded {

        /** Whether to run the embedded server: auto (when no target is set), true, or false. */
        private Mode enabled = Mode.AUTO;

        /** Also serve on this TCP port (0 = random). Unset: in-process only, no port opened. */
        private Integer port;

        /** Where the embedded server keeps state. Unset: a fresh temporary directory per run. */
        private Path dataDir;

        /** The sandbox runtime: auto or local. */
        private String runtime = "auto";

        public Mode getEnabled() {
            return enabled;
        }

        public void setEnabled(Mode enabled) {
            this.enabled = enabled;
        }

        public Integer getPort() {
            return port;
        }

        public void setPort(Integer port) {
            this.port = port;
        }

        public Path getDataDir() {
            return dataDir;
        }

        public void setDataDir(Path dataDir) {
            this.dataDir = dataDir;
        }

        public String getRuntime() {
            return runtime;
        }

        public void setRuntime(String runtime) {
            this.runtime = runtime;
        }
    }

    /** The local runtime of the embedded server. */
    public static class Local {

        /** How sandboxes are isolated: auto (the best available), required (refuse to start without), none. */
        private Isolation isolation = Isolation.AUTO;

        public Isolation getIsolation() {
            return isolation;
        }

        public void setIsolation(Isolation isolation) {
            this.isolation = isolation;
        }
    }

    /** auto / true / false switches. */
    public enum Mode { AUTO, TRUE, FALSE }

    /** Isolation choices of the local runtime. */
    public enum Isolation { AUTO, REQUIRED, NONE }
}
