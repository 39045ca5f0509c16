package ai.chalk.compute.server.worker;

import ai.chalk.compute.server.blob.BlobDigest;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.grpc.Status;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * A code snapshot's manifest (the protocol's {@code {"entries":[{"name","kind","digest","size"}]}}): the class path
 * entries of a function version, in order.
 *
 * @param entries the entries in class path order
 */
public record CodeManifest(List<Entry> entries) {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern SAFE_NAME = Pattern.compile("[0-9]{3}-[A-Za-z0-9._+-]{1,200}");

    public CodeManifest {
        entries = List.copyOf(entries);
    }

    /**
     * One class path entry.
     *
     * @param name   its file name (3-digit position + original name), safe as a file name
     * @param kind   {@code jar} (the file) or {@code dir} (a directory as a deterministic zip)
     * @param digest its blob
     * @param size   its size in bytes
     */
    public record Entry(String name, String kind, BlobDigest digest, long size) {

        /** Whether this entry is a directory sent as a zip. */
        public boolean isDir() {
            return kind.equals("dir");
        }
    }

    /** Parses a manifest; FAILED_PRECONDITION naming {@code digest} when it is not one. */
    public static CodeManifest parse(BlobDigest digest, byte[] json) {
        try {
            JsonNode root = JSON.readTree(json);
            JsonNode list = root == null ? null : root.get("entries");
            if (list == null || !list.isArray()) {
                throw invalid(digest, "it has no \"entries\" array");
            }
            List<Entry> entries = new ArrayList<>();
            for (JsonNode e : list) {
                String name = e.path("name").asText("");
                String kind = e.path("kind").asText("");
                if (!SAFE_NAME.matcher(name).matches() || name.equals(".") || name.contains("..")) {
                    throw invalid(
                            digest, "entry name \"" + name + "\" is not a 3-digit position and a plain file name");
                }
                if (!kind.equals("jar") && !kind.equals("dir")) {
                    throw invalid(digest, "entry " + name + " has kind \"" + kind + "\"; expected jar or dir");
                }
                BlobDigest d = BlobDigest.parse(
                        "manifest " + digest + " entry " + name + " digest",
                        e.path("digest").asText(""));
                entries.add(new Entry(name, kind, d, e.path("size").asLong(-1)));
            }
            if (entries.stream().map(Entry::name).distinct().count() != entries.size()) {
                throw invalid(digest, "two entries have the same name");
            }
            return new CodeManifest(entries);
        } catch (IOException e) {
            throw invalid(digest, "it is not JSON (" + e.getMessage() + ")");
        }
    }

    private static RuntimeException invalid(BlobDigest digest, String why) {
        return Status.FAILED_PRECONDITION
                .withDescription("code manifest " + digest + " is not a valid manifest: " + why
                        + "; deploy again with a client that follows docs/functions-protocol.md")
                .asRuntimeException();
    }
}
