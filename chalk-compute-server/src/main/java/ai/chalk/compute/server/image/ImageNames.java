package ai.chalk.compute.server.image;

import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.store.ImageBuildStore;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.function.Supplier;
import java.util.regex.Pattern;

/**
 * What the runtime calls the images an environment's sandboxes, container replicas and function workers name. A
 * build's tag ({@code BuildCustomImage}'s {@code tag}) is its environment's own: on the engine it is
 * {@value #TAGS}{@code <the environment's key>/<tag>}, and a name its environment asks for is that tag when the
 * environment made one. Before, a tag was the engine's plain name, forced over whatever had it, so that one tenant
 * tagging {@code debian:bookworm-slim} (or the workers' Java image) changed what every other environment's sandboxes
 * ran. The names of what this server built (a build's content-hash name, an environment's tag) are run only by the
 * environments that built them.
 */
public final class ImageNames {

    /** Where the environments' tags live on the engine. */
    static final String TAGS = "chalk-compute/env-";

    /** Where the docker runtime's builds live on the engine (their content-hash names). */
    private static final String BUILT = "chalk-compute/custom:";

    /** An image id, or a prefix of one, as the engine takes them. */
    private static final Pattern ID = Pattern.compile("(sha256:)?[0-9a-f]{4,64}");

    /** Hex digits of an environment's key: 64 bits, no two environments of one server alike. */
    private static final int KEY_HEX = 16;

    private final ImageBuildStore store;
    private final Supplier<ImageBuilder> builders;

    ImageNames(ImageBuildStore store, Supplier<ImageBuilder> builders) {
        this.store = store;
        this.builders = builders;
    }

    /** The engine's name of {@code environment}'s tag {@code tag} ({@code repository[:tag]}, {@code latest} if none). */
    static String engineTag(String environment, String tag) {
        int slash = tag.lastIndexOf('/');
        int colon = tag.lastIndexOf(':');
        String repository = colon > slash ? tag.substring(0, colon) : tag;
        String name = colon > slash ? tag.substring(colon + 1) : "latest";
        // a registry's port ("localhost:5000/app") cannot stand inside a repository path
        return TAGS + key(environment) + "/" + repository.replace(':', '-') + ":" + name;
    }

    /**
     * The image the runtime is to run for {@code requested}, an image name in a request of {@code environment}'s:
     * the environment's own tag of that name if it made one; else the name itself, unless this server built it for
     * other environments only.
     *
     * @param field the request's field, for the refusal
     * @throws ComputeException NOT_FOUND for a name of another environment's build or tag
     */
    public String forRuntime(String environment, String requested, String field) {
        if (requested.isEmpty()) {
            return requested;
        }
        if (requested.startsWith(TAGS)) {
            if (requested.startsWith(TAGS + key(environment) + "/")) {
                return requested;
            }
            throw notOurs(requested, field);
        }
        String tagged = engineTag(environment, requested);
        if (tagExists(tagged)) {
            return tagged;
        }
        if (store.builtOnlyElsewhere(environment, requested)) {
            throw notOurs(requested, field);
        }
        // the same image by another spelling (docker.io/..., its id or a prefix of it): refused when every name the
        // runtime knows it by is one of this server's builds or tags, none of them this environment's
        List<String> names = engineNames(requested);
        boolean unnamed = names.isEmpty() && ID.matcher(requested).matches() && tagExists(requested);
        if (unnamed
                || !names.isEmpty()
                        && names.stream().allMatch(ImageNames::serverMade)
                        && names.stream().noneMatch(n -> ours(environment, n))) {
            throw notOurs(requested, field);
        }
        return requested;
    }

    /** Whether the server made name {@code name}: a build's content-hash name, or an environment's tag. */
    private static boolean serverMade(String name) {
        return name.startsWith(TAGS) || name.startsWith(BUILT);
    }

    private boolean ours(String environment, String name) {
        return name.startsWith(TAGS + key(environment) + "/") || store.builtIn(environment, name);
    }

    private List<String> engineNames(String requested) {
        try {
            return builders.get().names(requested);
        } catch (RuntimeException e) {
            return List.of(); // an engine that does not answer: the sandbox's start says so
        }
    }

    /** Whether the runtime has an image of that name (an environment's tag, or an id with no name left). */
    private boolean tagExists(String engineName) {
        try {
            return builders.get().exists(engineName);
        } catch (RuntimeException e) {
            return false; // an engine that does not answer: the sandbox's start says so, in its own words
        }
    }

    private static ComputeException notOurs(String requested, String field) {
        return ComputeException.notFound(field + ": no image \"" + requested + "\" in this environment: the images"
                + " this server builds, and their tags, are run only in the environment that built them; build it"
                + " here (BuildCustomImage, or an image spec), or name an image of a registry");
    }

    private static String key(String environment) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(environment.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest).substring(0, KEY_HEX);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM has SHA-256", e);
        }
    }
}
