package ai.chalk.compute.server.runtime.docker;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.model.PullResponseItem;
import java.io.IOException;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Pulls an image into a Docker engine from its registry: what both runtimes do when a sandbox or a local image
 * names an image the engine lacks.
 */
public final class ImagePull {

    private ImagePull() {}

    /**
     * Pulls {@code image} ({@code name}, {@code name:tag} or {@code name@digest}; no tag means {@code latest}) as
     * anyone may: with no credentials, whatever the server's user has logged in to.
     *
     * @return empty when the engine has the image now, else why the pull failed, in the engine's words
     */
    public static Optional<String> pull(DockerClient client, String image, Duration timeout) {
        Optional<String> refused = refusedRegistry(image);
        return refused.isPresent() ? refused : pullFromAnyRegistry(client, image, timeout);
    }

    /** As {@link #pull}, from any registry: for tests, whose registries are on loopback. */
    static Optional<String> pullFromAnyRegistry(DockerClient client, String image, Duration timeout) {
        String repository = image;
        String tag = null;
        int at = image.indexOf('@');
        int colon = image.lastIndexOf(':');
        if (at < 0 && colon > image.lastIndexOf('/')) {
            repository = image.substring(0, colon);
            tag = image.substring(colon + 1);
        } else if (at < 0) {
            tag = "latest";
        }
        try {
            // docker-java would send the credentials of the server's user (~/.docker/config.json, its helpers) for the
            // image's registry: a tenant naming an image of the operator's private registry would get it with the
            // operator's login. Pulls are anonymous.
            var pull = client.pullImageCmd(repository).withAuthConfig(null);
            if (tag != null) {
                pull.withTag(tag);
            }
            Quiet<PullResponseItem> pulling = pull.exec(new Quiet<>());
            if (!pulling.awaitCompletion(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                pulling.close();
                return Optional.of("the pull took longer than " + timeout.toMinutes() + " minutes");
            }
            return pulling.failure == null
                    ? Optional.empty()
                    : Optional.of(DockerEngine.engineMessage(pulling.failure));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.of("interrupted");
        } catch (IOException | RuntimeException e) {
            return Optional.of(DockerEngine.engineMessage(e));
        }
    }

    /**
     * Why the engine must not pull {@code image}, if so: its registry is the engine's own host or the host's link-local
     * network. The engine pulls from the host's network, where no rule of the sandboxes' applies, and in plain HTTP
     * from a registry on loopback: a tenant naming {@code 127.0.0.1:8080/x} made it fetch from the host's own services
     * (the server's API, a database), and the engine's answer ("connection refused", an HTTP status) mapped which ports
     * listened. A name that resolves there is refused alike. (Images already on the engine are never pulled: an
     * operator loads such images beforehand.)
     */
    static Optional<String> refusedRegistry(String image) {
        int slash = image.indexOf('/');
        String registry = slash < 0 ? "" : image.substring(0, slash);
        // Docker's rule: the first part names a registry when it has a '.' or a ':', or is localhost
        if (!(registry.contains(".") || registry.contains(":") || registry.equals("localhost"))) {
            return Optional.empty();
        }
        String host = registry.startsWith("[")
                ? registry.substring(1, Math.max(1, registry.indexOf(']')))
                : registry.contains(":") ? registry.substring(0, registry.lastIndexOf(':')) : registry;
        InetAddress[] addresses;
        try {
            addresses = InetAddress.getAllByName(host);
        } catch (UnknownHostException e) {
            return Optional.empty(); // the engine will say it cannot find it
        }
        for (InetAddress a : addresses) {
            if (a.isLoopbackAddress() || a.isLinkLocalAddress() || a.isAnyLocalAddress() || ofThisHost(a)) {
                return Optional.of("image " + image + " names the registry " + registry + ", which is this server's"
                        + " host or its link-local network (" + a.getHostAddress() + "); images are not pulled from"
                        + " there: push it to another registry, or have the operator load it into the engine");
            }
        }
        return Optional.empty();
    }

    private static boolean ofThisHost(InetAddress address) {
        try {
            return NetworkInterface.getByInetAddress(address) != null;
        } catch (SocketException e) {
            return false;
        }
    }

    /**
     * A callback that keeps its failure for the caller instead of logging it as an error (docker-java's default): a
     * failed pull or a wait cut short by a removal is reported, or expected, by the runtimes.
     */
    static class Quiet<T> extends ResultCallback.Adapter<T> {
        volatile Throwable failure;

        @Override
        public void onError(Throwable throwable) {
            failure = throwable;
            try {
                close();
            } catch (IOException e) {
                // closing anyway
            }
        }
    }
}
