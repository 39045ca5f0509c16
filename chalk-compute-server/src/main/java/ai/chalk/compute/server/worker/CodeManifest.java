package ai.chalk.compute.server.worker;

import ai.chalk.compute.server.blob.BlobDigest;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
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

    /**
     * The most entries a manifest lists: an entry's name starts with its 3-digit position on the class path, and a
     * Spring Boot application's class path is a few hundred.
     */
    public static final int MAX_ENTRIES = 1000;

    /**
     * Parses a manifest; FAILED_PRECONDITION naming {@code digest} when it is not one. It is read as a stream, an entry
     * at a time, what is not an entry's field skipped unread, and refused at its {@link #MAX_ENTRIES}th + 1 entry: read
     * as a tree first, {@code {"entries":[{},{},...]}} of 16 MiB took half a gigabyte of the heap per deploy call.
     */
    public static CodeManifest parse(BlobDigest digest, byte[] json) {
        try (JsonParser in = JSON.getFactory().createParser(json)) {
            if (in.nextToken() != JsonToken.START_OBJECT) {
                throw invalid(digest, "it has no \"entries\" array");
            }
            List<Entry> entries = null;
            while (in.nextToken() == JsonToken.FIELD_NAME) {
                String field = in.currentName();
                JsonToken value = in.nextToken();
                if (field.equals("entries") && value == JsonToken.START_ARRAY && entries == null) {
                    entries = entries(digest, in);
                } else {
                    in.skipChildren();
                }
            }
            if (entries == null) {
                throw invalid(digest, "it has no \"entries\" array");
            }
            if (entries.stream().map(Entry::name).distinct().count() != entries.size()) {
                throw invalid(digest, "two entries have the same name");
            }
            return new CodeManifest(entries);
        } catch (IOException e) {
            throw invalid(digest, "it is not JSON (" + e.getMessage() + ")");
        }
    }

    /** The entries of the array {@code in} is at the start of; leaves {@code in} at its end. */
    private static List<Entry> entries(BlobDigest digest, JsonParser in) throws IOException {
        List<Entry> entries = new ArrayList<>();
        while (in.nextToken() != JsonToken.END_ARRAY) {
            if (entries.size() == MAX_ENTRIES) {
                throw invalid(digest, "it lists more than " + MAX_ENTRIES + " entries");
            }
            if (in.currentToken() != JsonToken.START_OBJECT) {
                throw invalid(digest, "an entry is not an object");
            }
            String name = "";
            String kind = "";
            String hex = "";
            long size = -1;
            while (in.nextToken() == JsonToken.FIELD_NAME) {
                String field = in.currentName();
                JsonToken value = in.nextToken();
                if (value == JsonToken.START_OBJECT || value == JsonToken.START_ARRAY) {
                    in.skipChildren(); // no field of an entry is an object or a list: read as a missing one
                    continue;
                }
                switch (field) {
                    case "name" -> name = value == JsonToken.VALUE_STRING ? in.getText() : "";
                    case "kind" -> kind = value == JsonToken.VALUE_STRING ? in.getText() : "";
                    case "digest" -> hex = value == JsonToken.VALUE_STRING ? in.getText() : "";
                    case "size" -> size = value == JsonToken.VALUE_NUMBER_INT ? in.getLongValue() : -1;
                    default -> {} // another scalar: nothing to skip
                }
            }
            if (!SAFE_NAME.matcher(name).matches() || name.equals(".") || name.contains("..")) {
                throw invalid(
                        digest, "entry name \"" + clip(name) + "\" is not a 3-digit position and a plain file name");
            }
            if (!kind.equals("jar") && !kind.equals("dir")) {
                throw invalid(digest, "entry " + name + " has kind \"" + clip(kind) + "\"; expected jar or dir");
            }
            BlobDigest d = BlobDigest.parse("manifest " + digest + " entry " + name + " digest", hex);
            entries.add(new Entry(name, kind, d, size));
        }
        return entries;
    }

    /** A value as a refusal quotes it: at most 100 characters. */
    private static String clip(String value) {
        return value.length() > 100 ? value.substring(0, 100) + "..." : value;
    }

    private static RuntimeException invalid(BlobDigest digest, String why) {
        return Status.FAILED_PRECONDITION
                .withDescription("code manifest " + digest + " is not a valid manifest: " + why
                        + "; deploy again with a client that follows docs/functions-protocol.md")
                .asRuntimeException();
    }
}
