package ai.chalk.compute.server.runtime.docker;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;

/**
 * The header of one frame of an exec's output as the engine multiplexes it without a terminal: 8 bytes, the stream
 * (1 stdout, 2 stderr) first and the payload's size, big-endian, last.
 *
 * @param stderr whether the payload is stderr's
 * @param size   how many payload bytes follow
 */
record EngineFrame(boolean stderr, int size) {

    /** The next frame's header, or null at the end of the stream. */
    static EngineFrame next(DataInputStream in) throws IOException {
        byte[] header = new byte[8];
        try {
            in.readFully(header);
        } catch (EOFException e) {
            return null;
        }
        int size = ((header[4] & 0xff) << 24)
                | ((header[5] & 0xff) << 16)
                | ((header[6] & 0xff) << 8)
                | (header[7] & 0xff);
        return new EngineFrame(header[0] == 2, size);
    }
}
