package ai.chalk.compute.autoconfigure;

import ai.chalk.compute.connection.ConnectionSettings;
import io.grpc.ChannelCredentials;
import io.grpc.InsecureChannelCredentials;
import io.grpc.TlsChannelCredentials;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.Locale;

/**
 * The remote target of {@code chalk.compute.*}: whether one is set, its gRPC address and the TLS choice made by the
 * properties ({@code chalk.compute.tls.*}, or the scheme of a URL target).
 */
public final class RemoteTarget {

    private final ConnectionSettings settings;
    private final boolean explicitTls;

    private RemoteTarget(ConnectionSettings settings, boolean explicitTls) {
        this.settings = settings;
        this.explicitTls = explicitTls;
    }

    /**
     * The remote target the environment names, if any: {@code chalk.compute.target} set and not blank (an empty value
     * means the embedded server, as if it were unset). Every condition that asks "is there a remote server?" asks
     * here, so that they cannot disagree.
     */
    public static java.util.Optional<String> configured(org.springframework.core.env.PropertyResolver environment) {
        String target = environment.getProperty(ChalkComputeProperties.PREFIX + ".target", "");
        return target.isBlank() ? java.util.Optional.empty() : java.util.Optional.of(target.strip());
    }

    static RemoteTarget of(ChalkComputeProperties properties) {
        String target = properties.getTarget();
        ConnectionSettings settings = ConnectionSettings.forTarget(target);
        String lower = target.toLowerCase(Locale.ROOT);
        boolean explicit = lower.startsWith("https://") || lower.startsWith("http://");
        ChalkComputeProperties.Tls tls = properties.getTls();
        if (tls.getTrustCertificates() != null) {
            if (!java.nio.file.Files.isReadable(tls.getTrustCertificates())) {
                throw new IllegalArgumentException(
                        "chalk.compute.tls.trust-certificates: cannot read " + tls.getTrustCertificates());
            }
            settings = settings.withTrustCertificates(tls.getTrustCertificates());
            explicit = true;
        }
        if (tls.getEnabled() != null) {
            settings = settings.withTls(tls.getEnabled());
            explicit = true;
        }
        return new RemoteTarget(settings, explicit);
    }

    /** The gRPC address: {@code host:port}, or what the user wrote (a Spring gRPC channel name, a URI). */
    String address() {
        return settings.target();
    }

    /** The settings for opening a channel with grpc-java alone. */
    ConnectionSettings connectionSettings() {
        return settings;
    }

    /**
     * The credentials the properties ask for, or {@code null} when they leave the choice to Spring
     * gRPC's channel settings (a {@code host:port} target with no {@code chalk.compute.tls.*}).
     */
    ChannelCredentials explicitCredentials() {
        if (!explicitTls) {
            return null;
        }
        if (!settings.useTls()) {
            return InsecureChannelCredentials.create();
        }
        TlsChannelCredentials.Builder tls = TlsChannelCredentials.newBuilder();
        if (settings.trustCertificates().isPresent()) {
            Path pem = settings.trustCertificates().get();
            try {
                tls.trustManager(pem.toFile());
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read chalk.compute.tls.trust-certificates " + pem, e);
            }
        }
        return tls.build();
    }

    String describeTls() {
        if (!explicitTls) {
            return "transport security from spring.grpc.client settings, plaintext by default";
        }
        return settings.useTls()
                ? "TLS"
                        + settings.trustCertificates()
                                .map(p -> " trusting " + p)
                                .orElse("")
                : "plaintext";
    }
}
