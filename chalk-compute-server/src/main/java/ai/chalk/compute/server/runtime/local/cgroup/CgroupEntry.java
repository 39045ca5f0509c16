package ai.chalk.compute.server.runtime.local.cgroup;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The command line by which a process enters its cgroups and takes its open-file limit before it executes anything
 * else: a sandbox's init and execs, its slirp4netns, an image build step. Written into the groups from inside, by the
 * process itself ({@code $$} stays the same pid through {@code exec}), so that the command and everything it starts
 * are born inside, and nothing runs outside them first.
 */
public final class CgroupEntry {

    private CgroupEntry() {}

    /** A file a command finds open, read-only, on descriptor {@code fd} (3 to 9) from its start. */
    public record OpenFile(int fd, Path file) {
        public OpenFile {
            if (fd < 3 || fd > 9) {
                throw new IllegalArgumentException(
                        "use a descriptor from 3 to 9 (0 to 2 are the standard streams), not " + fd);
            }
        }
    }

    /**
     * {@code /bin/sh -c 'ulimit -n N && echo $$ >"$1" && ... && shift N && exec "$@"' chalk-cgroup FILE... COMMAND...}.
     *
     * @param procsFiles the {@code cgroup.procs} files to join; none for the limit alone
     * @param openFiles  {@code RLIMIT_NOFILE}, soft and hard: the server's own (the JVM raises it to the hard limit,
     *                   often a million) is no sandbox's business
     */
    public static List<String> command(List<Path> procsFiles, int openFiles, List<String> command) {
        return command(procsFiles, openFiles, List.of(), command);
    }

    /**
     * As {@link #command(List, int, List)}, the same shell opening {@code open} on their descriptors as it executes
     * the command ({@code exec "$@" 3<"$f3" ...}), in the cgroups already: one process of a sandbox's start, not one
     * more per file.
     */
    public static List<String> command(
            List<Path> procsFiles, int openFiles, List<OpenFile> open, List<String> command) {
        StringBuilder script = new StringBuilder();
        script.append("ulimit -n ").append(openFiles).append(" && ");
        for (int i = 1; i <= procsFiles.size(); i++) {
            script.append("echo $$ >\"${").append(i).append("}\" && ");
        }
        StringBuilder redirects = new StringBuilder();
        for (int i = 0; i < open.size(); i++) {
            int fd = open.get(i).fd();
            script.append("chalk_fd")
                    .append(fd)
                    .append("=${")
                    .append(procsFiles.size() + i + 1)
                    .append("} && ");
            redirects.append(' ').append(fd).append("<\"$chalk_fd").append(fd).append('"');
        }
        script.append("shift ")
                .append(procsFiles.size() + open.size())
                .append(" && exec \"$@\"")
                .append(redirects)
                .append("; echo \"chalk: cannot enter the sandbox's cgroups\" >&2; exit 125");
        List<String> cmd = new ArrayList<>(List.of("/bin/sh", "-c", script.toString(), "chalk-cgroup"));
        procsFiles.forEach(f -> cmd.add(f.toString()));
        open.forEach(f -> cmd.add(f.file().toString()));
        cmd.addAll(command);
        return cmd;
    }
}
