package ai.chalk.compute.server.dataset;

import java.io.IOException;
import java.io.InputStream;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;

/** What an uploaded file holds, told by its bytes (never by a name the client chose). */
enum FileFormat {
    /** Apache Parquet: {@code PAR1} at both ends. Kept as uploaded. */
    PARQUET,
    /** JSON lines, one object per line (what the SDK sends for rows and column maps). Converted to Parquet. */
    JSON_LINES,
    /** Comma-separated values with a header line. Converted to Parquet. */
    CSV;

    /** The format of the file at {@code path}. */
    static FileFormat of(Path path) throws IOException {
        long size = Files.size(path);
        if (size >= 8) {
            try (RandomAccessFile file = new RandomAccessFile(path.toFile(), "r")) {
                byte[] head = new byte[4];
                byte[] tail = new byte[4];
                file.readFully(head);
                file.seek(size - 4);
                file.readFully(tail);
                if (isMagic(head) && isMagic(tail)) {
                    return PARQUET;
                }
            }
        }
        try (InputStream in = Files.newInputStream(path)) {
            for (int b; (b = in.read()) >= 0; ) {
                if (b == 0xEF || b == 0xBB || b == 0xBF || Character.isWhitespace(b)) {
                    continue; // a byte-order mark, blank lines
                }
                return b == '{' ? JSON_LINES : CSV;
            }
        }
        return CSV;
    }

    private static boolean isMagic(byte[] b) {
        return b[0] == 'P' && b[1] == 'A' && b[2] == 'R' && b[3] == '1';
    }
}
