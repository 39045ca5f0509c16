package ai.chalk.compute.code;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The interpreter's half of a snapshot, as code_sandboxes' "save and restore sandbox state" means it: the Python
 * snippets' variables written to a file of the sandbox (imported modules by name, functions by their source, other
 * values pickled one by one) before its files are taken, and read back by the sandbox made from the snapshot. The same
 * Python runs on every variant, through the variant's own interpreter ({@code namespace_snapshot.py}).
 *
 * @param variables the names kept (or restored)
 * @param skipped   the names that could not be (open files, sockets, a class without source, ...)
 */
record NamespaceSnapshot(List<String> variables, List<String> skipped) {

    private static final String HELPERS = helpers();

    NamespaceSnapshot {
        variables = List.copyOf(variables);
        skipped = List.copyOf(skipped);
    }

    /** Nothing kept: a snapshot of files only (JShell's state cannot be written out). */
    static NamespaceSnapshot none() {
        return new NamespaceSnapshot(List.of(), List.of());
    }

    /** Writes the namespace of {@code runner}'s interpreter to {@code path} (a path the interpreter sees). */
    static NamespaceSnapshot save(SnippetRunner runner, String path) {
        return call(runner, "_chalk_namespace_save", path, "save the interpreter's variables for the snapshot");
    }

    /** Reads back what {@link #save} wrote at {@code path}, if anything is there, into {@code runner}'s interpreter. */
    static NamespaceSnapshot restore(SnippetRunner runner, String path) {
        return call(runner, "_chalk_namespace_restore", path, "restore the snapshot's variables");
    }

    /** Removes {@code directory} (a path the interpreter sees) and what is in it. */
    static void remove(SnippetRunner runner, String directory) {
        runner.run(
                "__import__('shutil').rmtree(" + literal(directory) + ", ignore_errors=True)",
                RunOptions.defaults(),
                Optional.empty());
    }

    private static NamespaceSnapshot call(SnippetRunner runner, String function, String path, String what) {
        String code = HELPERS + "\ntry:\n    " + function + "(" + literal(path) + ")\nfinally:\n"
                + "    del _chalk_namespace_save, _chalk_namespace_restore\n";
        ExecutionResult result = runner.run(code, RunOptions.defaults(), Optional.empty());
        if (!result.success()) {
            String why = result.codeError()
                    .map(e -> e.name() + ": " + e.value())
                    .or(result::executionError)
                    .orElse("exit code " + result.exitCode().orElse(-1));
            throw new IllegalStateException("could not " + what + " (" + path + "): " + why);
        }
        List<String> variables = new ArrayList<>();
        List<String> skipped = new ArrayList<>();
        for (String line : result.stdout().split("\n")) {
            if (line.startsWith("variable ")) {
                variables.add(line.substring("variable ".length()));
            } else if (line.startsWith("skipped ")) {
                skipped.add(line.substring("skipped ".length()));
            }
        }
        return new NamespaceSnapshot(variables, skipped);
    }

    /** {@code text} as a Python string literal. */
    static String literal(String text) {
        StringBuilder out = new StringBuilder("'");
        for (char c : text.toCharArray()) {
            switch (c) {
                case '\\' -> out.append("\\\\");
                case '\'' -> out.append("\\'");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                default -> out.append(c);
            }
        }
        return out.append('\'').toString();
    }

    private static String helpers() {
        try (InputStream in = NamespaceSnapshot.class.getResourceAsStream("namespace_snapshot.py")) {
            if (in == null) {
                throw new IllegalStateException("namespace_snapshot.py is missing from chalk-compute-core's jar");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
