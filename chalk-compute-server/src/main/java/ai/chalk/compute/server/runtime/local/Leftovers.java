package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.host.HostTools;
import ai.chalk.compute.server.runtime.host.NoFollowDelete;
import ai.chalk.compute.server.runtime.host.WhenServerDies;
import ai.chalk.compute.server.runtime.local.cgroup.CgroupDriver;
import ai.chalk.compute.server.runtime.local.image.OverlayMount;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What local sandboxes leave behind when their server ends: their writable layers, image roots, id-mapped views and
 * cgroups. They never outlive the server (their init dies with it), so nothing is re-adopted: what is left is removed
 * at the next start ({@link #remove}) or, when the server is killed, right away by a watcher
 * ({@link #removeWhenServerDies}).
 */
final class Leftovers {

    /** The runtime's logger: these lines read as they always have. */
    private static final Logger log = LoggerFactory.getLogger(LocalRuntime.class);

    /**
     * What removes a killed server's sandboxes (see {@link WhenServerDies}): it thaws and kills whatever is left in
     * their groups (their inits die with the server, but a frozen process cannot die until thawed), detaches their
     * file systems (layers, id-mapped views, image roots, then the sandboxes directory's own mount) and removes their
     * directories and cgroups, and those of the image build steps that were running. It acts only on
     * the sandboxes there were when the server died, so a new server started on the same directory meanwhile loses
     * nothing. Arguments: the sandboxes directory, the image builds' work directory, then the base directory of each cgroup
     * hierarchy.
     */
    static final String SANDBOX_CLEANUP = """
            S=$1; B=$2; shift 2
            builds=$(cd "$B" 2>/dev/null && ls -d layer-* 2>/dev/null)
            cd "$S" || exit 0
            # the sandboxes', and the groups of the image build steps that were running
            ids="$(ls -A) $(for g in "$@"; do ls "$g"; done 2>/dev/null | grep '^build-' | sort -u)"
            for g in "$@"; do
              for id in $ids; do
                [ -f "$g/$id/freezer.state" ] && echo THAWED > "$g/$id/freezer.state"
                [ -f "$g/$id/cgroup.freeze" ] && echo 0 > "$g/$id/cgroup.freeze"
                [ -f "$g/$id/cgroup.kill" ] && echo 1 > "$g/$id/cgroup.kill"
                find "$g/$id" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r p; do kill -9 "$p"; done
              done
            done 2>/dev/null
            sleep 1
            for id in $ids; do
              umount -l "$S/$id" 2>/dev/null
              rm -rf --one-file-system "$S/$id"
              for g in "$@"; do
                [ -d "$g/$id" ] && find "$g/$id" -depth -type d -exec rmdir {} \\; 2>/dev/null
              done
            done
            for g in "$@"; do rmdir "$g" 2>/dev/null; done
            # the image build steps that were running: their mounts (layers, terminals, root) and work directories
            for n in $builds; do
              w="$B/$n"
              # mountinfo writes a space as \\040: match it so, and unescape what umount gets
              e=$(printf '%s/' "$w" | sed 's/ /\\\\040/g')
              E="$e" awk 'index($5, ENVIRON["E"]) == 1 {print $5}' /proc/self/mountinfo | sort -r |
                while read -r m; do umount -l "$(printf '%s' "$m" | sed 's/\\\\040/ /g')"; done
              rm -rf --one-file-system "$w"
            done 2>/dev/null
            # the directory's own mount (see SandboxesMount), unless a new server's sandboxes are mounted below it
            cd / && umount "$S" 2>/dev/null
            exit 0
            """;

    private Leftovers() {}

    /**
     * Starts the watcher that removes the sandboxes in {@code sandboxesDir} and their cgroups, and the mounts and work
     * of the image build steps in {@code buildsDir}, right after this server is killed; null when it cannot start (logged: then the next start removes them).
     */
    static @Nullable WhenServerDies removeWhenServerDies(
            Path sandboxesDir, Path buildsDir, CgroupDriver cgroups, HostTools tools) {
        try {
            List<String> args = new ArrayList<>(List.of(sandboxesDir.toString(), buildsDir.toString()));
            cgroups.baseDirs().forEach(d -> args.add(d.toString()));
            return WhenServerDies.start("chalk-sandbox-cleanup", SANDBOX_CLEANUP, args, tools.get("setsid"));
        } catch (IOException e) {
            log.warn("A killed server's sandboxes will be cleaned up only at its next start: {}", e.toString());
            return null;
        }
    }

    /**
     * Removes the layers and cgroups of the sandboxes found in {@code sandboxesDir} or {@code cgroups} that
     * {@code inUse} does not claim, together with anything still running in those cgroups; an image sandbox's root
     * is unmounted first, never deleted through.
     */
    static void remove(Path sandboxesDir, CgroupDriver cgroups, Predicate<String> inUse) {
        List<String> leftovers = new ArrayList<>();
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(sandboxesDir)) {
            for (Path d : dirs) {
                leftovers.add(d.getFileName().toString());
            }
        } catch (IOException e) {
            log.warn("Cannot list leftover sandboxes in {}: {}", sandboxesDir, e.toString());
        }
        for (String id : cgroups.leftoverIds()) {
            if (!leftovers.contains(id)) {
                leftovers.add(id);
            }
        }
        for (String id : leftovers) {
            if (inUse.test(id)) {
                continue;
            }
            cgroups.removeSandbox(id);
            OverlayMount.unmountAllUnder(sandboxesDir.resolve(id));
            try {
                NoFollowDelete.delete(sandboxesDir.resolve(id));
            } catch (IOException e) {
                log.warn("Cannot remove the leftover layer of sandbox {}: {}", id, e.toString());
            }
            log.info("Removed leftovers of sandbox {}", id);
        }
    }
}
