package ai.chalk.compute.code;

import ai.chalk.compute.files.FileAccessDeniedException;
import ai.chalk.compute.files.FileEntry;
import ai.chalk.compute.files.FileNotFoundInSandboxException;
import ai.chalk.compute.files.FileType;
import ai.chalk.compute.files.SandboxFileException;
import ai.chalk.compute.files.WrongFileTypeException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.grpc.Status;
import java.io.IOException;
import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;

/**
 * Files through a Jupyter server's contents API ({@code /api/contents}), for the {@code jupyter} and {@code docker}
 * variants. Paths mean what they mean to the kernel: relative ones from its working directory, absolute ones as they
 * are, as long as they are under the server's root directory (the container's {@code /} in the docker variant; a
 * path outside it is refused, as the API cannot reach it). The API has no permission bits: entries show mode 0.
 */
final class JupyterFiles implements CodeFiles {

    private static final ObjectMapper JSON = new ObjectMapper();

    private final JupyterRunner server;
    private final String kernelDir;
    private final String rootDir;

    /**
     * {@code kernelDir}: the kernel's working directory as a contents path (empty for the server's root);
     * {@code rootDir}: the server's root directory on its machine.
     */
    JupyterFiles(JupyterRunner server, String kernelDir, String rootDir) {
        this.server = server;
        this.kernelDir = kernelDir;
        this.rootDir = rootDir.endsWith("/") ? rootDir : rootDir + "/";
    }

    /** The contents-API path of {@code path}, without leading or trailing slashes. */
    String apiPath(String operation, String path) {
        if (path.isEmpty()) {
            throw new IllegalArgumentException("the path is empty");
        }
        String joined;
        if (path.startsWith("/")) {
            String normal = "/" + normalize(path);
            if (!(normal + "/").startsWith(rootDir)) {
                throw new FileAccessDeniedException(
                        operation,
                        path,
                        "outside the Jupyter server's root directory " + rootDir
                                + ", which is all its contents API reaches",
                        "");
            }
            joined = normal.length() < rootDir.length() ? "" : normal.substring(rootDir.length());
        } else {
            joined = kernelDir.isEmpty() ? path : kernelDir + "/" + path;
        }
        return normalize(joined);
    }

    private static String normalize(String joined) {
        List<String> parts = new ArrayList<>();
        for (String part : joined.split("/")) {
            if (part.isEmpty() || part.equals(".")) {
                continue;
            }
            if (part.equals("..")) {
                if (!parts.isEmpty()) {
                    parts.remove(parts.size() - 1);
                }
                continue;
            }
            parts.add(part);
        }
        return String.join("/", parts);
    }

    private static String url(String apiPath, String query) {
        StringBuilder u = new StringBuilder("api/contents");
        for (String part : apiPath.split("/")) {
            if (!part.isEmpty()) {
                u.append('/')
                        .append(URLEncoder.encode(part, StandardCharsets.UTF_8).replace("+", "%20"));
            }
        }
        return u.append(query).toString();
    }

    @Override
    public byte[] readBytes(String path) {
        HttpResponse<String> r =
                server.call("GET", url(apiPath("read", path), "?type=file&format=base64&content=1"), "");
        JsonNode model = model("read", path, r);
        return Base64.getMimeDecoder().decode(model.path("content").asText());
    }

    @Override
    public void writeBytes(String path, byte[] content) {
        String api = apiPath("write", path);
        int slash = api.lastIndexOf('/');
        if (slash > 0) {
            makeDirectories(path, api.substring(0, slash));
        }
        String body = JSON.createObjectNode()
                .put("type", "file")
                .put("format", "base64")
                .put("content", Base64.getEncoder().encodeToString(content))
                .toString();
        model("write", path, server.call("PUT", url(api, ""), body));
    }

    private void makeDirectories(String path, String dir) {
        String sofar = "";
        for (String part : dir.split("/")) {
            sofar = sofar.isEmpty() ? part : sofar + "/" + part;
            HttpResponse<String> r = server.call("GET", url(sofar, "?content=0"), "");
            if (r.statusCode() == 404) {
                model("write", path, server.call("PUT", url(sofar, ""), "{\"type\":\"directory\"}"));
            } else if (!model("write", path, r).path("type").asText().equals("directory")) {
                throw new WrongFileTypeException("write", path, "/" + sofar + " is not a directory", "");
            }
        }
    }

    @Override
    public List<FileEntry> list(String path) {
        HttpResponse<String> r = server.call("GET", url(apiPath("list", path), "?content=1"), "");
        JsonNode model = model("list", path, r);
        if (!model.path("type").asText().equals("directory")) {
            throw new WrongFileTypeException("list", path, "is not a directory", "");
        }
        List<FileEntry> entries = new ArrayList<>();
        for (JsonNode child : model.path("content")) {
            FileType type = child.path("type").asText().equals("directory") ? FileType.DIRECTORY : FileType.FILE;
            entries.add(new FileEntry(
                    child.path("name").asText(),
                    "/" + child.path("path").asText(),
                    type,
                    child.path("size").asLong(0),
                    0,
                    instant(child.path("last_modified").asText()),
                    Optional.empty()));
        }
        entries.sort(Comparator.comparing(FileEntry::name));
        return entries;
    }

    private static Instant instant(String text) {
        try {
            return Instant.parse(text);
        } catch (RuntimeException e) {
            return Instant.EPOCH;
        }
    }

    /** The JSON model of a 2xx answer; any other answer as the file exception it means. */
    private static JsonNode model(String operation, String path, HttpResponse<String> r) {
        int status = r.statusCode();
        String reason = reason(r.body());
        if (status / 100 == 2) {
            try {
                return r.body().isEmpty() ? JSON.createObjectNode() : JSON.readTree(r.body());
            } catch (IOException e) {
                throw new SandboxFileException(
                        Status.Code.INTERNAL, operation, path, "the Jupyter server answered with what is not JSON", "");
            }
        }
        if (status == 404) {
            return fail(new FileNotFoundInSandboxException(operation, path, reason));
        }
        if (status == 403) {
            return fail(new FileAccessDeniedException(operation, path, reason, ""));
        }
        if (status == 400 && reason.contains("directory")) {
            return fail(new WrongFileTypeException(operation, path, reason, ""));
        }
        throw new SandboxFileException(
                Status.Code.UNKNOWN, operation, path, "the Jupyter server answered " + status + ": " + reason, "");
    }

    private static JsonNode fail(SandboxFileException e) {
        throw e;
    }

    private static String reason(String body) {
        try {
            JsonNode n = JSON.readTree(body);
            return n.path("message").asText(body);
        } catch (IOException | RuntimeException e) {
            return body;
        }
    }
}
