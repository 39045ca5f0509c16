package ai.chalk.compute.server.snapshot;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.concurrent.TimeUnit;

/** Deletes snapshot trees, which hold whatever a sandbox wrote: links are removed, never followed. */
final class Trees {

    private Trees() {
    }

    /**
     * Deletes {@code dir} and everything below it without following symlinks or crossing into other file
     * systems: GNU {@code rm -rf --one-file-system} where available (any depth), else a walk that never follows
     * links. Nothing there is fine.
     */
    static void delete(Path dir) throws IOException {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        Path rm = Path.of("/bin/rm");
        if (Files.isExecutable(rm)) {
            Process p = new ProcessBuilder(rm.toString(), "-rf", "--one-file-system", "--", dir.toString())
                    .redirectErrorStream(true)
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                    .start();
            String out = new String(p.getInputStream().readNBytes(4096), StandardCharsets.UTF_8).trim();
            p.getInputStream().transferTo(java.io.OutputStream.nullOutputStream());
            try {
                p.waitFor(10, TimeUnit.MINUTES);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while deleting " + dir, e);
            }
            if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
                return;
            }
            if (!out.isEmpty()) {
                throw new IOException("cannot delete " + dir + ": " + out);
            }
        }
        Files.walkFileTree(dir, new SimpleFileVisitor<>() { // without FOLLOW_LINKS: links are visited as files
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Files.delete(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
                if (e != null) {
                    throw e;
                }
                Files.delete(d);
                return FileVisitResult.CONTINUE;
            }
        });
    }
}
