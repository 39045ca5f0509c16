package ai.chalk.compute.server.runtime.docker;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a Dockerfile built on the docker runtime may not do, read the way the engine's parser reads it (instructions
 * joined across line continuations, comments and blank lines inside them skipped, {@code ONBUILD} triggers checked as
 * instructions). The engine, not the build's container, carries out some instructions, on the host and with the
 * engine's rights; those are refused:
 *
 * <ul>
 *   <li>{@code ADD} of anything but a plain path of the build context: the engine fetches URLs itself, from the
 *       host's network (its loopback, cloud metadata), outside every restriction of the build; a source with quotes,
 *       {@code $}, {@code \} or {@code :} could become a URL after the engine's word processing, so only plain path
 *       characters (and globs) are let through;</li>
 *   <li>{@code --from} on {@code COPY} and {@code ADD}: an image spec builds one stage on its base image, so
 *       {@code --from} could only name another image on the engine (another tenant's);</li>
 *   <li>a second {@code FROM}, and the flags only BuildKit understands (the classic builder would stop mid-build);
 *       {@code RUN} takes no flags at all there.</li>
 * </ul>
 */
final class DockerfilePolicy {

    /** One line of a Dockerfile and the spec field it came from. */
    record Line(String text, String field) {}

    /** A whole instruction: its keyword (upper case), its arguments, and the field its first line came from. */
    record Instruction(String keyword, String arguments, String field) {}

    private static final Pattern CONTINUATION = Pattern.compile("\\\\[ \\t]*$");
    /** What a plain context path may contain: no scheme, no variable, no quote or escape, no space. */
    private static final Pattern PLAIN_SOURCE = Pattern.compile("[A-Za-z0-9._/*?\\[\\]@+=,~-]+");

    private static final ObjectMapper JSON = new ObjectMapper();

    private DockerfilePolicy() {}

    /** Whether a Dockerfile line continues on the next (ends in a backslash, spaces after it aside). */
    static boolean continues(String line) {
        return CONTINUATION.matcher(line).find();
    }

    /** Why the Dockerfile may not be built, naming the field and what to do; empty when it may. */
    static Optional<String> refusal(List<Line> lines) {
        Optional<String> dangling = danglingContinuation(lines);
        if (dangling.isPresent()) {
            return dangling;
        }
        List<Instruction> instructions = instructions(lines);
        for (int i = 0; i < instructions.size(); i++) {
            Instruction ins = instructions.get(i);
            if (i == 0 && ins.keyword().equals("FROM") || ins.field().equals(BuildShell.FIELD)) {
                continue; // the base image and the build's restricted shell, written by the renderer
            }
            Optional<String> why = refusal(ins, ins.field(), "");
            if (why.isPresent()) {
                return why;
            }
        }
        return Optional.empty();
    }

    /**
     * A dockerfile_commands step whose last line continues: the engine would join the next line of the Dockerfile,
     * which the step did not write (another step's, or one the build adds for itself), to the step's instruction.
     */
    private static Optional<String> danglingContinuation(List<Line> lines) {
        for (int i = 0; i < lines.size(); i++) {
            Line line = lines.get(i);
            if (!line.field().contains(".dockerfile_commands[") || !continues(line.text())) {
                continue;
            }
            String step = line.field().substring(0, line.field().indexOf(".dockerfile_commands["));
            int next = i + 1;
            while (next < lines.size()
                    && (lines.get(next).text().isBlank()
                            || lines.get(next).text().strip().startsWith("#"))) {
                next++;
            }
            if (next == lines.size() || !lines.get(next).field().startsWith(step + ".dockerfile_commands[")) {
                return Optional.of(line.field() + " ends in a line continuation (\\) that nothing in its step"
                        + " continues: the engine would join the next line of the Dockerfile, which the step did not"
                        + " write, to it; finish the instruction within the step");
            }
        }
        return Optional.empty();
    }

    /**
     * Why a base image's {@code ONBUILD} triggers (which the engine runs as the first instructions of a build on it)
     * may not run; empty when they may.
     */
    static Optional<String> triggerRefusal(String baseImage, List<String> triggers) {
        for (String trigger : triggers) {
            Instruction ins = parse(trigger, "image_spec.base_image");
            if (ins == null) {
                continue;
            }
            String where = "image_spec.base_image \"" + baseImage + "\"";
            if (ins.keyword().equals("RUN")) {
                // triggers run right after FROM, before the build's restricted shell (BuildShell) is in place
                return Optional.of(where + " has the ONBUILD trigger \"" + shorten(trigger) + "\", which would run"
                        + " a command before the build's restrictions apply: build on an image without ONBUILD RUN"
                        + " triggers, or run the command in a run_commands step");
            }
            Optional<String> why = refusal(ins, where, "has the ONBUILD trigger \"" + shorten(trigger) + "\" that ");
            if (why.isPresent()) {
                return why;
            }
        }
        return Optional.empty();
    }

    private static Optional<String> refusal(Instruction ins, String where, String via) {
        String at = where + " " + via;
        switch (ins.keyword()) {
            case "FROM" -> {
                return Optional.of(at + "starts another build stage (FROM): an image spec builds one stage; set"
                        + " image_spec.base_image instead");
            }
            case "ONBUILD" -> {
                Instruction inner = parse(ins.arguments(), ins.field());
                return inner == null
                        ? Optional.empty()
                        : refusal(inner, where, via.isEmpty() ? "in its ONBUILD trigger " : via);
            }
            case "RUN" -> {
                List<String> flags = flags(ins.arguments());
                if (!flags.isEmpty()) {
                    return Optional.of(buildKitOnly(at, flags.get(0)));
                }
                if (ins.arguments().strip().startsWith("[") && ins.field().contains(".dockerfile_commands[")) {
                    return Optional.of(at + "runs a command in exec form (RUN [\"...\"]), which would skip the"
                            + " build's restricted shell (sandbox capabilities, no_new_privs): write it in shell form");
                }
            }
            case "SHELL" -> {
                return Optional.of(at + "sets the SHELL, which the build keeps for itself: its steps run through a"
                        + " shell that gives them a sandbox's capabilities and no_new_privs; write commands for"
                        + " /bin/sh");
            }
            case "ADD", "COPY" -> {
                List<String> flags = flags(ins.arguments());
                for (String flag : flags) {
                    String name = flagName(flag);
                    if (name.equals("from")) {
                        return Optional.of(at + ins.keyword() + "s from another image ("
                                + shorten(flag) + "): an image spec builds one stage on its base image and may not"
                                + " read other images on the engine; build on an image that has the files"
                                + " (image_spec.base_image), or send them with add_file");
                    }
                    if (!name.equals("chown")) {
                        return Optional.of(buildKitOnly(at, flag));
                    }
                }
                if (ins.keyword().equals("ADD")) {
                    List<String> sources = sources(ins.arguments(), flags.size());
                    for (String source : sources) {
                        if (!PLAIN_SOURCE.matcher(source).matches() || source.contains("//")) {
                            return Optional.of(at + "ADDs \"" + shorten(source) + "\", which is not a plain path of"
                                    + " the build context: the engine would fetch a URL itself, from the host's"
                                    + " network and outside the build's restrictions; download it in a run_commands"
                                    + " step (curl or wget run in the build's own network), or send the file with"
                                    + " add_file");
                        }
                    }
                }
            }
            default -> {
                // every other instruction changes the image's configuration or runs nothing on the engine
            }
        }
        return Optional.empty();
    }

    private static String buildKitOnly(String at, String flag) {
        return at + "uses --" + flagName(flag) + ", which only BuildKit understands; the docker runtime builds with"
                + " the Engine's classic builder: write the step without it (add_file takes a mode)";
    }

    /** The instructions of a Dockerfile as the engine's parser joins them. */
    static List<Instruction> instructions(List<Line> lines) {
        List<Instruction> found = new ArrayList<>();
        StringBuilder current = null;
        String field = null;
        for (Line line : lines) {
            String text = line.text();
            String stripped = text.strip();
            if (stripped.isEmpty() || stripped.startsWith("#")) {
                continue; // outside an instruction and inside a continuation alike, the parser skips them
            }
            if (current == null) {
                current = new StringBuilder();
                field = line.field();
            }
            Matcher m = CONTINUATION.matcher(text);
            if (m.find()) {
                current.append(text, 0, m.start());
                continue;
            }
            current.append(text);
            Instruction ins = parse(current.toString(), field);
            if (ins != null) {
                found.add(ins);
            }
            current = null;
        }
        if (current != null) {
            Instruction ins = parse(current.toString(), field);
            if (ins != null) {
                found.add(ins);
            }
        }
        return found;
    }

    private static Instruction parse(String text, String field) {
        String s = text.strip();
        if (s.isEmpty()) {
            return null;
        }
        String[] parts = s.split("\\s+", 2);
        return new Instruction(parts[0].toUpperCase(Locale.ROOT), parts.length > 1 ? parts[1] : "", field);
    }

    /** The leading {@code --flag[=value]} words of an instruction's arguments. */
    private static List<String> flags(String arguments) {
        List<String> flags = new ArrayList<>();
        for (String word : words(arguments)) {
            if (!word.startsWith("--")) {
                break;
            }
            flags.add(word);
        }
        return flags;
    }

    private static String flagName(String flag) {
        String name = flag.substring(2);
        int eq = name.indexOf('=');
        return (eq >= 0 ? name.substring(0, eq) : name).toLowerCase(Locale.ROOT);
    }

    /** The sources of an {@code ADD} (every argument after the flags but the destination), JSON form or not. */
    private static List<String> sources(String arguments, int flagCount) {
        List<String> words = words(arguments);
        String rest = String.join(" ", words.subList(Math.min(flagCount, words.size()), words.size()))
                .strip();
        List<String> args;
        if (rest.startsWith("[")) {
            try {
                args = Arrays.asList(JSON.readValue(rest, String[].class));
            } catch (JsonProcessingException e) {
                args = words(rest); // the engine reads it as the shell form then
            }
        } else {
            args = words(rest);
        }
        return args.size() <= 1 ? args : args.subList(0, args.size() - 1);
    }

    private static List<String> words(String s) {
        String t = s.strip();
        return t.isEmpty() ? List.of() : List.of(t.split("\\s+"));
    }

    private static String shorten(String s) {
        String one = s.replaceAll("\\s+", " ").strip();
        return one.length() <= 80 ? one : one.substring(0, 77) + "...";
    }
}
