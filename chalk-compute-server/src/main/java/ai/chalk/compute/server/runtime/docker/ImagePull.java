package ai.chalk.compute.server.runtime.docker;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.model.PullResponseItem;
import java.io.IOException;
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
