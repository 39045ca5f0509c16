package ai.chalk.compute.server.runtime.local.cgroup;

import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.Optional;

/** A host whose cgroups this runtime cannot use (or was told not to): sandboxes get no groups, and it says why. */
public record NoCgroups(String reason) implements CgroupDriver {

    @Override
    public String version() {
        return "cgroup";
    }

    @Override
    public List<String> controllers() {
        return List.of();
    }

    @Override
    public boolean has(String controller) {
        return false;
    }

    @Override
    public boolean any() {
        return false;
    }

    @Override
    public boolean tracksExecs() {
        return false;
    }

    @Override
    public boolean freezer() {
        return false;
    }

    @Override
    public String freezerName() {
        return "cgroup v1 freezer (or cgroup v2's cgroup.freeze)";
    }

    @Override
    public Optional<String> freezerProblem() {
        return Optional.of(reason);
    }

    @Override
    public Optional<String> problem() {
        return Optional.of(reason);
    }

    @Override
    public SandboxCgroup create(String id, ResourceLimits limits, long pidsMax) throws IOException {
        throw new IOException("no cgroups: " + reason);
    }

    @Override
    public Collection<Path> baseDirs() {
        return List.of();
    }

    @Override
    public void removeSandbox(String id) {
        // no groups to remove
    }
}
