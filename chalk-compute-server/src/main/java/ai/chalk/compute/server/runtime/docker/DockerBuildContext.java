package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.proto.sandbox.v1.BuildStep;
import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.server.image.ImagePaths;
import ai.chalk.compute.server.image.Lz4Frames;
import ai.chalk.compute.server.runtime.host.SandboxTools;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

/**
 * The build context the docker runtime sends the engine for an image spec: a Dockerfile and the files it copies.
 *
 * <p>Rendering, in order: {@code FROM base_image}; {@code WORKDIR} and one {@code ENV} per variable (sorted) before
 * the steps, so the steps run in them; then per step: {@code run_commands} one {@code RUN} each (shell form, or
 * {@code RUN ["/bin/sh","-c",...]} when the command spans lines); {@code pip_install}
 * {@code RUN PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-cache-dir <quoted packages>};
 * {@code uv_pip_install} {@code RUN uv pip install --system <quoted packages>}; {@code add_file} a context file with
 * its mode (default 0644) and {@code COPY ["files/<step>", "<destination>"]} (the classic builder keeps a context
 * file's mode; relative destinations are resolved against the workdir); {@code dockerfile_commands} inlined;
 * {@code uv_sync} its decompressed {@code pyproject.toml} (and {@code uv.lock}) copied into its directory and
 * {@code uv sync} into the image's Python; then {@code ENTRYPOINT} and {@code CMD} in JSON form.
 *
 * @param dockerfile   the Dockerfile's text
 * @param files        context files by path, with their modes
 * @param instructions for each Dockerfile instruction in order (the engine's "Step N/M", lines joined by a
 *                     continuation counting once), what in the spec it came from, to name a failing step
 * @param fields       for each line of the Dockerfile, the spec field it came from
 *                     ({@code image_spec.steps[2].dockerfile_commands[0]}), for {@link DockerfilePolicy}
 */
record DockerBuildContext(
        String dockerfile, Map<String, ContextFile> files, List<String> instructions, List<String> fields) {

    /** Default mode of an {@code add_file} without one. */
    static final int DEFAULT_FILE_MODE = 0644;

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern SHELL_SAFE = Pattern.compile("[\\w@%+=:,./-]+");
    /** Copies the build shell's helpers into the image (see {@link BuildShell}). */
    private static final String HELPERS = "COPY [\"chalk/\", \"" + SandboxTools.MOUNT + "/\"]";

    /** A file of the context: its bytes and permission bits. */
    record ContextFile(byte[] content, int mode) {}

    /** Renders the spec without the build's restricted shell (what {@link DockerfilePolicy} judges). */
    static DockerBuildContext of(ImageSpec spec) {
        return of(spec, java.util.Optional.empty());
    }

    /**
     * Renders the spec; it has been validated ({@link ai.chalk.compute.server.image.ImageSpecCheck}). With a
     * {@link BuildShell}, it is made the {@code SHELL} right after {@code FROM}, its helpers are copied in afresh
     * before every {@code RUN} (a root step could have rewritten them for the steps after it), and the last steps
     * restore {@code /bin/sh -c} and remove them.
     */
    static DockerBuildContext of(ImageSpec spec, java.util.Optional<BuildShell> shell) {
        Rendering r = new Rendering(shell);
        r.add(
                "FROM " + spec.getBaseImage().trim(),
                "base_image \"" + spec.getBaseImage().trim() + "\"",
                "image_spec.base_image");
        shell.ifPresent(s -> {
            r.files.putAll(s.contextFiles());
            r.add("SHELL " + json(s.shell()), BuildShell.FIELD, BuildShell.FIELD);
        });
        if (spec.hasWorkdir() && !spec.getWorkdir().isBlank()) {
            r.add("WORKDIR " + quoted(spec.getWorkdir()), "image_spec.workdir");
        }
        new TreeMap<>(spec.getEnvMap())
                .forEach((k, v) -> r.add("ENV " + k + "=" + quoted(v), "image_spec.env[" + k + "]"));
        for (int i = 0; i < spec.getStepsCount(); i++) {
            renderStep(r, spec, i);
        }
        if (spec.getEntrypointCount() > 0) {
            r.add("ENTRYPOINT " + json(spec.getEntrypointList()), "image_spec.entrypoint");
        }
        if (spec.getCmdCount() > 0) {
            r.add("CMD " + json(spec.getCmdList()), "image_spec.cmd");
        }
        if (shell.isPresent()) {
            r.add("SHELL [\"/bin/sh\", \"-c\"]", BuildShell.FIELD, BuildShell.FIELD);
            r.add(
                    "RUN " + json(List.of(SandboxTools.busybox(), "rm", "-rf", SandboxTools.MOUNT)),
                    BuildShell.FIELD,
                    BuildShell.FIELD);
        }
        return new DockerBuildContext(String.join("\n", r.lines) + "\n", r.files, r.origins, r.fields);
    }

    private static void renderStep(Rendering r, ImageSpec spec, int i) {
        BuildStep step = spec.getSteps(i);
        String at = "steps[" + i + "]";
        switch (step.getStepCase()) {
            case RUN_COMMANDS -> {
                List<String> commands = step.getRunCommands().getCommandsList();
                for (int j = 0; j < commands.size(); j++) {
                    r.add(run(r, commands.get(j)), at + " (run_commands[" + j + "]: " + shorten(commands.get(j)) + ")");
                }
            }
            case PIP_INSTALL -> {
                List<String> packages = step.getPipInstall().getPackagesList();
                if (!packages.isEmpty()) {
                    String command = "PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-cache-dir "
                            + quotedWords(packages);
                    r.add("RUN " + command, at + " (pip_install: " + shorten(String.join(" ", packages)) + ")");
                }
            }
            case UV_PIP_INSTALL -> {
                List<String> packages = step.getUvPipInstall().getPackagesList();
                if (!packages.isEmpty()) {
                    r.add(
                            "RUN uv pip install --system " + quotedWords(packages),
                            at + " (uv_pip_install: " + shorten(String.join(" ", packages)) + ")");
                }
            }
            case ADD_FILE -> {
                var add = step.getAddFile();
                String destination = ImagePaths.resolve(ImagePaths.base(spec), add.getDestination());
                String source = "files/" + i;
                r.files.put(
                        source,
                        new ContextFile(
                                add.getContent().toByteArray(), add.hasMode() ? add.getMode() : DEFAULT_FILE_MODE));
                r.add("COPY " + json(List.of(source, destination)), at + " (add_file " + destination + ")");
            }
            case DOCKERFILE_COMMANDS -> {
                List<String> lines = step.getDockerfileCommands().getCommandsList();
                for (int j = 0; j < lines.size(); j++) {
                    String line = lines.get(j).strip();
                    if (!line.isEmpty() && !line.startsWith("#")) {
                        r.add(
                                line,
                                at + " (dockerfile_commands[" + j + "]: " + shorten(line) + ")",
                                "image_spec." + at + ".dockerfile_commands[" + j + "]");
                    }
                }
            }
            case UV_SYNC -> {
                var sync = step.getUvSync();
                String dir = ImagePaths.resolve(ImagePaths.base(spec), sync.hasWorkdir() ? sync.getWorkdir() : ".");
                String where = at + " (uv_sync in " + dir + ")";
                String prefix = dir.equals("/") ? "/" : dir + "/";
                r.files.put(
                        "files/" + i + "/pyproject.toml",
                        new ContextFile(
                                Lz4Frames.decompress(
                                        sync.getPyprojectTomlLz4().toByteArray(), at + ".uv_sync.pyproject_toml_lz4"),
                                0644));
                r.add("COPY " + json(List.of("files/" + i + "/pyproject.toml", prefix + "pyproject.toml")), where);
                if (sync.hasUvLockLz4()) {
                    r.files.put(
                            "files/" + i + "/uv.lock",
                            new ContextFile(
                                    Lz4Frames.decompress(
                                            sync.getUvLockLz4().toByteArray(), at + ".uv_sync.uv_lock_lz4"),
                                    0644));
                    r.add("COPY " + json(List.of("files/" + i + "/uv.lock", prefix + "uv.lock")), where);
                }
                StringBuilder command = new StringBuilder("cd " + shellQuote(dir)
                        + " && UV_PROJECT_ENVIRONMENT=\"$(python3 -c 'import sys; print(sys.prefix)')\""
                        + " uv sync --no-install-project");
                if (sync.hasUvLockLz4()) {
                    command.append(" --frozen");
                }
                for (String extra : sync.getExtrasList()) {
                    command.append(" --extra ").append(shellQuote(extra));
                }
                r.add("RUN " + command, where);
            }
            default -> throw new IllegalArgumentException(at + " has no step (the spec was not validated)");
        }
    }

    /** The Dockerfile's lines, each with the spec field it came from. */
    List<DockerfilePolicy.Line> lines() {
        String[] text = dockerfile.split("\n", -1);
        List<DockerfilePolicy.Line> lines = new ArrayList<>(fields.size());
        for (int i = 0; i < fields.size(); i++) {
            lines.add(new DockerfilePolicy.Line(text[i], fields.get(i)));
        }
        return lines;
    }

    /** The build context as a tar stream's bytes, for the engine's build API. */
    byte[] tar() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (TarArchiveOutputStream tar = new TarArchiveOutputStream(bytes)) {
            tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
            tar.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
            put(tar, "Dockerfile", dockerfile.getBytes(StandardCharsets.UTF_8), 0644);
            for (var f : files.entrySet()) {
                put(tar, f.getKey(), f.getValue().content(), f.getValue().mode());
            }
            tar.finish();
        } catch (IOException e) {
            throw new UncheckedIOException("writing the build context failed", e);
        }
        return bytes.toByteArray();
    }

    private static void put(TarArchiveOutputStream tar, String name, byte[] content, int mode) throws IOException {
        TarArchiveEntry entry = new TarArchiveEntry(name);
        entry.setSize(content.length);
        entry.setMode(TarArchiveEntry.DEFAULT_FILE_MODE & ~07777 | mode);
        entry.setIds(0, 0);
        entry.setModTime(0);
        tar.putArchiveEntry(entry);
        tar.write(content);
        tar.closeArchiveEntry();
    }

    /** A RUN instruction: shell form when the command is one line, else the exec form of the same shell. */
    private static String run(Rendering r, String command) {
        boolean oneLine = command.indexOf('\n') < 0
                && command.indexOf('\r') < 0
                && !command.strip().endsWith("\\");
        if (oneLine) {
            return "RUN " + command;
        }
        // exec form, which SHELL does not apply to: through the build's shell explicitly
        List<String> words = new ArrayList<>(r.shell.map(BuildShell::shell).orElse(List.of("/bin/sh", "-c")));
        words.add(command);
        return "RUN " + json(words);
    }

    /** A value in double quotes, as ENV and WORKDIR read it: no variable expansion, quotes and backslashes kept. */
    private static String quoted(String value) {
        return "\"" + value.replace("\\", "\\\\").replace("\"", "\\\"").replace("$", "\\$") + "\"";
    }

    private static String json(List<String> values) {
        try {
            return JSON.writeValueAsString(values);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String quotedWords(List<String> words) {
        List<String> quoted = new ArrayList<>(words.size());
        words.forEach(w -> quoted.add(shellQuote(w)));
        return String.join(" ", quoted);
    }

    /** Quotes a word for a POSIX shell as Python's {@code shlex.quote} does. */
    static String shellQuote(String word) {
        if (word.isEmpty()) {
            return "''";
        }
        return SHELL_SAFE.matcher(word).matches() ? word : "'" + word.replace("'", "'\"'\"'") + "'";
    }

    private static String shorten(String s) {
        String one = s.replaceAll("\\s+", " ").strip();
        return one.length() <= 120 ? one : one.substring(0, 117) + "...";
    }

    /** The Dockerfile being written: its lines, where each came from, and the context files. */
    private static final class Rendering {
        final java.util.Optional<BuildShell> shell;
        final List<String> lines = new ArrayList<>();
        final List<String> origins = new ArrayList<>();
        final List<String> fields = new ArrayList<>();
        final Map<String, ContextFile> files = new TreeMap<>();
        /** Whether the last line added continues on the next (a dockerfile_commands line ending in a backslash). */
        boolean continued;

        Rendering(java.util.Optional<BuildShell> shell) {
            this.shell = shell;
        }

        void add(String line, String origin) {
            add(line, origin, origin.startsWith("image_spec") ? origin : "image_spec." + origin.split(" ", 2)[0]);
        }

        void add(String line, String origin, String field) {
            if (!continued && shell.isPresent() && runs(line)) {
                // before every RUN, ours included: the steps before it could have rewritten the helpers
                lines.add(HELPERS);
                origins.add(BuildShell.FIELD);
                fields.add(BuildShell.FIELD);
            }
            lines.add(line);
            fields.add(field);
            if (!continued) {
                origins.add(origin); // one per instruction, as the engine numbers its steps
            }
            continued = DockerfilePolicy.continues(line);
        }

        private static boolean runs(String line) {
            String[] words = line.strip().split("\\s+", 2);
            return words[0].equalsIgnoreCase("RUN");
        }
    }
}
