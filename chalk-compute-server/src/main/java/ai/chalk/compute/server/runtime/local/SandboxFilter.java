package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.seccomp.SyscallFilter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The compiled syscall filter of every sandbox process, the file bubblewrap reads it from, and the file of the
 * inits' filter (which lets them join their user namespace, see {@link SyscallFilter#forSandboxInits}).
 */
record SandboxFilter(SyscallFilter filter, Path file, Path initFile) {

    /** The runtime's logger: these lines read as they always have. */
    private static final Logger log = LoggerFactory.getLogger(LocalRuntime.class);

    /**
     * Compiles both filters and writes them into {@code stateDir}: about a second on a cold JVM (JNA, libseccomp),
     * so a runtime builds them once, off its start-up path.
     *
     * @throws UncheckedIOException when the files cannot be written
     */
    static SandboxFilter build(Path stateDir) {
        try {
            SyscallFilter f = SyscallFilter.forSandboxes();
            SandboxFilter built = new SandboxFilter(
                    f, f.writeTo(stateDir), SyscallFilter.forSandboxInits().writeTo(stateDir, "seccomp-init.bpf"));
            log.debug("Sandbox syscall filter: {}", f);
            return built;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the sandbox syscall filter into " + stateDir, e);
        }
    }
}
