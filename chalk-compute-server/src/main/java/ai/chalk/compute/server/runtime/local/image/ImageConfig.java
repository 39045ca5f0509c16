package ai.chalk.compute.server.runtime.local.image;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What of an image's configuration a local sandbox honours (the {@code config} object of an OCI or Docker image
 * configuration).
 *
 * @param env        {@code KEY=VALUE} entries, in order
 * @param workingDir the default working directory, empty for none
 * @param user       the user processes run as, empty for root
 * @param entrypoint the entrypoint, empty for none
 * @param cmd        the default arguments (or command), empty for none
 */
public record ImageConfig(List<String> env, String workingDir, String user, List<String> entrypoint, List<String> cmd) {

    public static final ImageConfig EMPTY = new ImageConfig(List.of(), "", "", List.of(), List.of());

    public ImageConfig {
        env = List.copyOf(env);
        workingDir = workingDir == null ? "" : workingDir;
        user = user == null ? "" : user;
        entrypoint = List.copyOf(entrypoint);
        cmd = List.copyOf(cmd);
    }

    /** Reads the {@code config} object of an image configuration blob (missing fields are empty). */
    static ImageConfig fromImageJson(JsonNode image) {
        return fromConfigJson(image.path("config"));
    }

    /** Reads a {@code config} object as written by {@link #toJson()} or found in an image configuration. */
    static ImageConfig fromConfigJson(JsonNode c) {
        return new ImageConfig(
                strings(c.path("Env")),
                c.path("WorkingDir").asText(""),
                c.path("User").asText(""),
                strings(c.path("Entrypoint")),
                strings(c.path("Cmd")));
    }

    ObjectNode toJson() {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        ArrayNode env = o.putArray("Env");
        this.env.forEach(env::add);
        o.put("WorkingDir", workingDir);
        o.put("User", user);
        ArrayNode ep = o.putArray("Entrypoint");
        entrypoint.forEach(ep::add);
        ArrayNode c = o.putArray("Cmd");
        cmd.forEach(c::add);
        return o;
    }

    /** The environment as a map; an entry without {@code =} sets the variable to the empty string. */
    public Map<String, String> envMap() {
        Map<String, String> m = new LinkedHashMap<>();
        for (String e : env) {
            int eq = e.indexOf('=');
            if (eq > 0) {
                m.put(e.substring(0, eq), e.substring(eq + 1));
            } else if (eq < 0 && !e.isEmpty()) {
                m.put(e, "");
            }
        }
        return m;
    }

    /** Whether processes run as root: no user, or user/uid 0 (with group 0 or none). */
    public boolean runsAsRoot() {
        String u = user.trim();
        if (u.isEmpty()) {
            return true;
        }
        String[] parts = u.split(":", 2);
        boolean rootUser = parts[0].equals("root") || parts[0].equals("0");
        boolean rootGroup = parts.length == 1 || parts[1].equals("root") || parts[1].equals("0");
        return rootUser && rootGroup;
    }

    /** Entrypoint then cmd, as Docker runs them; empty when the image names neither. */
    public List<String> startCommand() {
        List<String> c = new ArrayList<>(entrypoint);
        c.addAll(cmd);
        return c;
    }

    /** This configuration with {@code env} entries set (replacing same-named ones, as a Dockerfile ENV does). */
    public ImageConfig withEnv(Map<String, String> more) {
        Map<String, String> m = envMap();
        m.putAll(more);
        List<String> entries = new ArrayList<>();
        m.forEach((k, v) -> entries.add(k + "=" + v));
        return new ImageConfig(entries, workingDir, user, entrypoint, cmd);
    }

    public ImageConfig withWorkingDir(String dir) {
        return new ImageConfig(env, dir, user, entrypoint, cmd);
    }

    /** As a Dockerfile: ENTRYPOINT replaces the entrypoint and drops the inherited CMD; CMD replaces the cmd. */
    public ImageConfig withStart(List<String> newEntrypoint, List<String> newCmd) {
        if (!newEntrypoint.isEmpty()) {
            return new ImageConfig(env, workingDir, user, newEntrypoint, newCmd);
        }
        return newCmd.isEmpty() ? this : new ImageConfig(env, workingDir, user, entrypoint, newCmd);
    }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        if (array.isArray()) {
            array.forEach(n -> out.add(n.asText()));
        }
        return out;
    }
}
