package ai.chalk.compute.server.runtime.local.image;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;

/** The files of an image layout or archive ({@code index.json}, {@code blobs/sha256/...}), by relative path. */
interface Blobs extends Closeable {

    /** Whether the layout holds a regular file at {@code path}. */
    boolean has(String path);

    /** Opens the file at {@code path}. */
    InputStream open(String path) throws IOException;
}
