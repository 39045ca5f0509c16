package ai.chalk.compute.server.runtime.local.cgroup;

import java.nio.file.Path;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * What one exec joins: the {@code cgroup.procs} files its first process writes itself into (before it executes the
 * command, so that everything it starts is born inside), and the group of its own that kills reach it by, absent where
 * the host cannot give one (cgroup v1 without the {@code pids} controller).
 */
public record ExecCgroup(List<Path> procsFiles, @Nullable ProcessGroup group) {
    public ExecCgroup {
        procsFiles = List.copyOf(procsFiles);
    }
}
