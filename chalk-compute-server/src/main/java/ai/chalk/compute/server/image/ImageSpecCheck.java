package ai.chalk.compute.server.image;

import ai.chalk.compute.proto.sandbox.v1.BuildStep;
import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.server.error.ComputeException;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Validates an image spec before anything is recorded or built, whatever the runtime: every refusal is
 * INVALID_ARGUMENT naming the field ({@code image_spec.steps[2].add_file.destination}) and what to change. Sizes are
 * bounded so that one request cannot fill the store or stall the builder.
 */
public final class ImageSpecCheck {

    static final int MAX_STEPS = 500;
    static final int MAX_ITEMS = 1000;
    static final int MAX_REFERENCE_CHARS = 512;
    static final int MAX_PATH_CHARS = 4096;
    static final int MAX_COMMAND_CHARS = 64 * 1024;
    static final int MAX_PACKAGE_CHARS = 1024;
    static final int MAX_ENV_NAME_CHARS = 256;
    static final int MAX_ENV_VALUE_CHARS = 32 * 1024;
    /** All files of one spec together (add_file contents and uv_sync's files, decompressed). */
    static final long MAX_FILE_BYTES = 64L << 20;

    private static final Pattern REFERENCE = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:/@+-]*");
    private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_.-]*");

    private ImageSpecCheck() {}

    /** Refuses a spec that no runtime could build as asked. */
    public static void validate(ImageSpec spec) {
        String base = spec.getBaseImage().trim();
        if (base.isEmpty()) {
            throw invalid("image_spec.base_image is required: name the image to build on, for example"
                    + " \"python:3.12-slim\"");
        }
        if (base.length() > MAX_REFERENCE_CHARS || !REFERENCE.matcher(base).matches()) {
            throw invalid("image_spec.base_image \"" + shorten(base) + "\" is not an image reference (letters,"
                    + " digits and . _ : / @ + -, at most " + MAX_REFERENCE_CHARS + " characters)");
        }
        if (spec.hasWorkdir()) {
            checkPath("image_spec.workdir", spec.getWorkdir());
            if (!spec.getWorkdir().startsWith("/")) {
                throw invalid("image_spec.workdir \"" + shorten(spec.getWorkdir()) + "\" must be an absolute path");
            }
        }
        checkEnv(spec.getEnvMap());
        checkList("image_spec.entrypoint", spec.getEntrypointList(), MAX_COMMAND_CHARS, false);
        checkList("image_spec.cmd", spec.getCmdList(), MAX_COMMAND_CHARS, false);
        if (spec.getStepsCount() > MAX_STEPS) {
            throw invalid("image_spec.steps has " + spec.getStepsCount() + " steps; at most " + MAX_STEPS
                    + " are allowed: merge commands into fewer steps");
        }
        long fileBytes = 0;
        for (int i = 0; i < spec.getStepsCount(); i++) {
            fileBytes += checkStep(spec, i);
            if (fileBytes > MAX_FILE_BYTES) {
                throw invalid("image_spec.steps carry more than " + (MAX_FILE_BYTES >> 20) + " MiB of files"
                        + " (at steps[" + i + "]): put large data in a volume or a base image instead");
            }
        }
    }

    /** Checks one step and returns how many bytes of files it carries. */
    private static long checkStep(ImageSpec spec, int i) {
        BuildStep step = spec.getSteps(i);
        String field = "image_spec.steps[" + i + "]";
        switch (step.getStepCase()) {
            case RUN_COMMANDS ->
                checkList(
                        field + ".run_commands.commands",
                        step.getRunCommands().getCommandsList(),
                        MAX_COMMAND_CHARS,
                        false);
            case PIP_INSTALL ->
                checkList(
                        field + ".pip_install.packages",
                        step.getPipInstall().getPackagesList(),
                        MAX_PACKAGE_CHARS,
                        true);
            case UV_PIP_INSTALL ->
                checkList(
                        field + ".uv_pip_install.packages",
                        step.getUvPipInstall().getPackagesList(),
                        MAX_PACKAGE_CHARS,
                        true);
            case DOCKERFILE_COMMANDS -> {
                List<String> lines = step.getDockerfileCommands().getCommandsList();
                checkList(field + ".dockerfile_commands.commands", lines, MAX_COMMAND_CHARS, true);
                for (int j = 0; j < lines.size(); j++) {
                    String keyword = lines.get(j).strip().split("\\s+", 2)[0].toUpperCase(Locale.ROOT);
                    if (keyword.equals("FROM")) {
                        throw invalid(field + ".dockerfile_commands.commands[" + j + "] is a FROM, which would start"
                                + " another build stage: set image_spec.base_image instead");
                    }
                }
            }
            case ADD_FILE -> {
                var add = step.getAddFile();
                String dest = add.getDestination();
                if (dest.isBlank()) {
                    throw invalid(field + ".add_file.destination is required: the path of the file in the image");
                }
                checkPath(field + ".add_file.destination", dest);
                if (dest.contains("$")) {
                    throw invalid(field + ".add_file.destination \"" + shorten(dest) + "\" contains '$', which the"
                            + " image builder would expand as a variable: choose a path without it");
                }
                String resolved;
                try {
                    resolved = ImagePaths.resolve(ImagePaths.base(spec), dest);
                } catch (IllegalArgumentException e) {
                    throw invalid(field + ".add_file.destination " + e.getMessage());
                }
                if (resolved.equals("/") || dest.endsWith("/")) {
                    throw invalid(field + ".add_file.destination \"" + shorten(dest) + "\" names a directory; give"
                            + " the file's path, for example /app/config.yaml");
                }
                if (add.hasMode() && (add.getMode() & ~07777) != 0) {
                    throw invalid(field + ".add_file.mode 0" + Integer.toOctalString(add.getMode()) + " is not a"
                            + " permission mode: give at most 07777, for example 0755 (493) for an executable");
                }
                return add.getContent().size();
            }
            case UV_SYNC -> {
                var sync = step.getUvSync();
                if (sync.getPyprojectTomlCase()
                        == ai.chalk.compute.proto.sandbox.v1.UvSyncStep.PyprojectTomlCase.PYPROJECTTOML_NOT_SET) {
                    throw invalid(field + ".uv_sync.pyproject_toml_lz4 is required: the project's pyproject.toml,"
                            + " LZ4-compressed");
                }
                checkList(field + ".uv_sync.extras", sync.getExtrasList(), MAX_PACKAGE_CHARS, true);
                if (sync.hasWorkdir()) {
                    checkPath(field + ".uv_sync.workdir", sync.getWorkdir());
                    try {
                        ImagePaths.resolve(ImagePaths.base(spec), sync.getWorkdir());
                    } catch (IllegalArgumentException e) {
                        throw invalid(field + ".uv_sync.workdir " + e.getMessage());
                    }
                }
                // counted as they will be held: decompressed (LZ4 packs 16 MiB of zeros in 66 KiB, and a spec of 500
                // such files counted by their compressed size held 8 GiB of the heap while it was built)
                long bytes = Lz4Frames.decompress(
                                sync.getPyprojectTomlLz4().toByteArray(), field + ".uv_sync.pyproject_toml_lz4")
                        .length;
                if (sync.hasUvLockLz4()) {
                    bytes += Lz4Frames.decompress(sync.getUvLockLz4().toByteArray(), field + ".uv_sync.uv_lock_lz4")
                            .length;
                }
                return bytes;
            }
            case STEP_NOT_SET ->
                throw invalid(field + " sets no step: give one of run_commands, pip_install,"
                        + " add_file, dockerfile_commands, uv_pip_install or uv_sync");
            default ->
                throw invalid(field + " is a kind of step this server does not know (field "
                        + step.getStepCase().getNumber() + ")");
        }
        return 0;
    }

    private static void checkEnv(Map<String, String> env) {
        if (env.size() > MAX_ITEMS) {
            throw invalid("image_spec.env has " + env.size() + " variables; at most " + MAX_ITEMS + " are allowed");
        }
        for (var e : env.entrySet()) {
            String name = e.getKey();
            if (name.length() > MAX_ENV_NAME_CHARS || !ENV_NAME.matcher(name).matches()) {
                throw invalid("image_spec.env has the name \"" + shorten(name) + "\", which is not a variable name"
                        + " (a letter or _, then letters, digits, _ . or -)");
            }
            String value = e.getValue();
            if (value.length() > MAX_ENV_VALUE_CHARS) {
                throw invalid("image_spec.env[" + name + "] is " + value.length() + " characters; at most "
                        + MAX_ENV_VALUE_CHARS + " are allowed");
            }
            if (value.chars().anyMatch(c -> c != '\t' && Character.isISOControl(c))) {
                throw invalid("image_spec.env[" + name + "] contains a line break or control character, which an"
                        + " image's environment cannot hold: put such data in a file (add_file)");
            }
        }
    }

    private static void checkList(String field, List<String> items, int maxChars, boolean singleLine) {
        if (items.size() > MAX_ITEMS) {
            throw invalid(field + " has " + items.size() + " entries; at most " + MAX_ITEMS + " are allowed");
        }
        for (int j = 0; j < items.size(); j++) {
            String item = items.get(j);
            if (item.length() > maxChars) {
                throw invalid(field + "[" + j + "] is " + item.length() + " characters; at most " + maxChars
                        + " are allowed");
            }
            if (item.indexOf('\0') >= 0) {
                throw invalid(field + "[" + j + "] contains a NUL character");
            }
            if (singleLine && item.chars().anyMatch(c -> c != '\t' && Character.isISOControl(c))) {
                throw invalid(
                        field + "[" + j + "] contains a line break or control character: give one item per" + " entry");
            }
        }
    }

    private static void checkPath(String field, String path) {
        if (path.length() > MAX_PATH_CHARS) {
            throw invalid(field + " is " + path.length() + " characters; at most " + MAX_PATH_CHARS + " are allowed");
        }
        if (path.chars().anyMatch(Character::isISOControl)) {
            throw invalid(field + " contains a line break or control character");
        }
    }

    private static String shorten(String s) {
        return s.length() <= 80 ? s : s.substring(0, 77) + "...";
    }

    private static ComputeException invalid(String message) {
        return ComputeException.invalid(message);
    }
}
