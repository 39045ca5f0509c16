package ai.chalk.compute.server.runtime.network;

import ai.chalk.compute.server.runtime.RuntimeStartException;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The host programs that give a sandbox egress, found by their real paths on a fixed search path (never the
 * server's own {@code PATH}, which a user may have set): slirp4netns (Debian {@code slirp4netns}), nft (Debian
 * {@code nftables}), and util-linux's nsenter and setpriv.
 *
 * @param slirp4netns the user-mode network stack
 * @param nft         the firewall tool, run inside the sandbox's network namespace
 * @param nsenter     enters that namespace
 * @param setpriv     gives slirp4netns a parent-death signal
 */
public record EgressTools(Path slirp4netns, Path nft, Path nsenter, Path setpriv) {

    /** Where the tools are looked for. */
    public static final String SEARCH_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

    /** The tools on {@link #SEARCH_PATH}. */
    public static EgressTools find() throws RuntimeStartException {
        return find(SEARCH_PATH);
    }

    /** The tools on {@code searchPath}, or what to install. */
    public static EgressTools find(String searchPath) throws RuntimeStartException {
        Map<String, Path> found = new LinkedHashMap<>();
        List<String> missing = new ArrayList<>();
        for (String name : List.of("slirp4netns", "nft", "nsenter", "setpriv")) {
            Path p = which(name, searchPath);
            if (p == null) {
                missing.add(name);
            } else {
                found.put(name, p);
            }
        }
        if (!missing.isEmpty()) {
            throw new RuntimeStartException("a sandbox with network needs " + String.join(", ", missing)
                    + ", not found in " + searchPath + ": install slirp4netns and nftables (and util-linux), "
                    + "or create the sandbox without network");
        }
        return new EgressTools(found.get("slirp4netns"), found.get("nft"), found.get("nsenter"), found.get("setpriv"));
    }

    private static Path which(String name, String searchPath) {
        for (String dir : searchPath.split(":")) {
            if (!dir.startsWith("/")) {
                continue;
            }
            Path candidate = Path.of(dir, name);
            if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                try {
                    return candidate.toRealPath();
                } catch (IOException e) {
                    // vanished meanwhile; keep looking
                }
            }
        }
        return null;
    }

    /**
     * Runs one of the tools with {@code input} on its stdin and a clean environment (only {@link #SEARCH_PATH}), for
     * at most ten seconds.
     *
     * @return {@code null} when it succeeds, else what it said (or its exit code, or that it timed out)
     */
    static String run(List<String> command, String input) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(command).directory(new File("/")).redirectErrorStream(true);
        pb.environment().clear();
        pb.environment().put("PATH", SEARCH_PATH);
        Process p = pb.start();
        try (OutputStream in = p.getOutputStream()) {
            in.write(input.getBytes(StandardCharsets.UTF_8));
        }
        ByteArrayOutputStream said = new ByteArrayOutputStream();
        p.getInputStream().transferTo(said);
        try {
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return String.join(" ", command) + " timed out";
            }
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
        String out = said.toString(StandardCharsets.UTF_8).trim();
        return p.exitValue() == 0 ? null : (out.isEmpty() ? "exit code " + p.exitValue() : out);
    }
}
