package ai.chalk.compute.server.runtime.local.image;

import ai.chalk.compute.server.runtime.docker.ImagePull;
import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.InspectImageResponse;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.core.DefaultDockerClientConfig;
import com.github.dockerjava.core.DockerClientImpl;
import com.github.dockerjava.httpclient5.ApacheDockerHttpClient;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.Optional;

/**
 * Images of a Docker engine, for the local runtime: looked up by name, exported with {@code docker save}. The
 * client connects on first use, so a server without an engine only fails when an engine image is asked for.
 */
final class DockerEngineImages implements AutoCloseable {

    private final String host;
    private DockerClient client;

    /** @param host the engine ({@code unix:///...}, {@code tcp://...}); null for {@code DOCKER_HOST} or the default socket */
    DockerEngineImages(String host) {
        this.host = host;
    }

    /**
     * The id (hex SHA-256 of its configuration) of the engine's image {@code name}.
     *
     * @throws ImageSourceException when no engine answers or it has no such image
     */
    String idOf(String name) throws ImageSourceException {
        InspectImageResponse inspected;
        try {
            inspected = client().inspectImageCmd(name).exec();
        } catch (NotFoundException e) {
            // like `docker run`: an image the engine lacks is pulled from its registry
            Optional<String> failed = ImagePull.pull(client(), name, Duration.ofMinutes(10));
            if (failed.isPresent()) {
                throw new ImageSourceException("image \"" + name + "\" is not in the Docker engine at " + where()
                        + " and pulling it failed (" + failed.get() + "): pull, load or build it there first (or"
                        + " name an OCI layout as oci:NAME[:TAG] or oci-archive:NAME[:TAG])");
            }
            try {
                inspected = client().inspectImageCmd(name).exec();
            } catch (RuntimeException again) {
                throw new ImageSourceException("image \"" + name + "\" was pulled but the Docker engine at " + where()
                        + " cannot find it: " + message(again));
            }
        } catch (RuntimeException e) {
            throw new ImageSourceException("image \"" + name + "\" names neither an OCI layout (oci:NAME[:TAG],"
                    + " oci-archive:NAME[:TAG]) nor an image of a Docker engine, and no Docker engine answers at "
                    + where() + " (" + message(e) + ")");
        }
        String id = inspected.getId();
        return id.startsWith("sha256:") ? id.substring("sha256:".length()) : id;
    }

    /** Writes {@code docker save} of the image to {@code file}, leaving {@code reserve} bytes free on its disk. */
    void save(String id, Path file, long reserve) throws IOException {
        try (InputStream in = new DiskReservedStream(
                client().saveImageCmd("sha256:" + id).exec(),
                file.getParent(),
                reserve,
                "exporting image " + id + " from the Docker engine")) {
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
        } catch (RuntimeException e) {
            throw new ImageSourceException(
                    "the Docker engine at " + where() + " could not export image " + id + ": " + message(e));
        }
    }

    private synchronized DockerClient client() {
        if (client == null) {
            DefaultDockerClientConfig.Builder b = DefaultDockerClientConfig.createDefaultConfigBuilder();
            if (host != null) {
                b.withDockerHost(host);
            }
            DefaultDockerClientConfig config = b.build();
            ApacheDockerHttpClient http = new ApacheDockerHttpClient.Builder()
                    .dockerHost(config.getDockerHost())
                    .sslConfig(config.getSSLConfig())
                    .connectionTimeout(Duration.ofSeconds(5))
                    .build();
            client = DockerClientImpl.getInstance(config, http);
        }
        return client;
    }

    private String where() {
        return Optional.ofNullable(host)
                .or(() -> Optional.ofNullable(System.getenv("DOCKER_HOST")))
                .orElse("unix:///var/run/docker.sock");
    }

    private static String message(RuntimeException e) {
        Throwable t = e;
        while (t.getCause() != null && t.getMessage() == null) {
            t = t.getCause();
        }
        return t.getMessage() == null ? t.toString() : t.getMessage();
    }

    @Override
    public synchronized void close() {
        if (client != null) {
            try {
                client.close();
            } catch (IOException e) {
                // closing anyway
            }
            client = null;
        }
    }
}
