package ai.chalk.compute.code;

import java.util.List;
import java.util.Objects;

/**
 * A snapshot made by {@link CodeSandbox#createSnapshot(String)}, as code_sandboxes' snapshots: the sandbox's state,
 * to start new sandboxes of the same variant from with {@link SandboxConfig.Builder#snapshot(String)} and
 * {@link #id()}. The state is the sandbox's files and the Python interpreter's variables ({@link #variables()}; what
 * cannot be written out, such as open files and sockets, is in {@link #skipped()}). Where each variant keeps it:
 *
 * <ul>
 *   <li>{@code chalk}: a snapshot on the server (its id is this id), the variables in a file of it.
 *   <li>{@code docker}: an image of the container ({@code docker commit}), named by this id.
 *   <li>{@code eval}: a copy of the working directory and the variables under
 *       {@code ~/.chalk-compute/code-snapshots/ID}.
 *   <li>{@code jupyter}: the variables in {@code chalk-snapshots/ID.pickle} of the kernel's directory on its server;
 *       the server's files are shared by all its kernels already, so they are not copied.
 * </ul>
 *
 * <p>JShell's state ({@link Language#JAVA}) cannot be written out: its snapshots have the files only. Thread-safe.
 */
public final class CodeSnapshot {

    private final String name;
    private final String id;
    private final Variant variant;
    private final NamespaceSnapshot namespace;
    private final Runnable deleter;

    CodeSnapshot(String name, String id, Variant variant, NamespaceSnapshot namespace, Runnable deleter) {
        this.name = Objects.requireNonNull(name, "name");
        this.id = Objects.requireNonNull(id, "id");
        this.variant = variant;
        this.namespace = namespace;
        this.deleter = deleter;
    }

    /** The name it was made with. */
    public String name() {
        return name;
    }

    /** What {@link SandboxConfig.Builder#snapshot(String)} takes to start a sandbox of {@link #variant()} from it. */
    public String id() {
        return id;
    }

    /** The variant whose sandboxes start from it. */
    public Variant variant() {
        return variant;
    }

    /** The interpreter's names kept: variables, imported modules, functions defined by snippets. */
    public List<String> variables() {
        return namespace.variables();
    }

    /** The interpreter's names that could not be kept (open files, sockets, classes whose source is unknown, ...). */
    public List<String> skipped() {
        return namespace.skipped();
    }

    /** Deletes the snapshot (the server's snapshot, the image, the directory or the file); sandboxes made stay. */
    public void delete() {
        deleter.run();
    }

    @Override
    public String toString() {
        return "CodeSnapshot[" + variant.label() + " " + name + " " + id + "]";
    }
}
