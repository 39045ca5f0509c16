package ai.chalk.compute.server.runtime.docker;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * What the exec wrapper ({@link Scripts}) printed before the command began: its first stdout line (found, no such
 * command, no such directory, or the command's pid), and whatever else was read with it, which belongs to the
 * command. The engine's stream is multiplexed (8-byte frame headers) unless the exec has a terminal.
 *
 * @param line   the marker line, or null when the stream ended before one
 * @param stdout what followed the marker on stdout
 * @param stderr what came on stderr meanwhile
 * @param text   everything read, when the stream ended before a marker (the wrapper's or the shell's complaint)
 */
record ExecMarker(String line, byte[] stdout, byte[] stderr, String text) {

    /**
     * Reads from the exec's stream until the wrapper's marker line (or the end of the stream), closing the connection
     * when nothing came within {@code timeoutSeconds}.
     */
    static ExecMarker read(
            EngineConnection connection, boolean pty, ScheduledExecutorService scheduler, long timeoutSeconds)
            throws IOException {
        ScheduledFuture<?> watchdog = scheduler.schedule(connection::close, timeoutSeconds, TimeUnit.SECONDS);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        try {
            InputStream in = connection.in();
            DataInputStream frames = new DataInputStream(in);
            byte[] buf = new byte[8192];
            while (true) {
                int newline = indexOf(out, '\n');
                if (newline >= 0) {
                    byte[] all = out.toByteArray();
                    String line = new String(all, 0, newline, StandardCharsets.UTF_8);
                    if (line.endsWith("\r")) {
                        line = line.substring(0, line.length() - 1);
                    }
                    byte[] rest = java.util.Arrays.copyOfRange(all, newline + 1, all.length);
                    return new ExecMarker(line, rest, err.toByteArray(), "");
                }
                if (pty) {
                    int n = in.read(buf);
                    if (n < 0) {
                        break;
                    }
                    out.write(buf, 0, n);
                } else {
                    EngineFrame frame = EngineFrame.next(frames);
                    if (frame == null) {
                        break;
                    }
                    int size = frame.size();
                    byte[] payload = frames.readNBytes(size);
                    (frame.stderr() ? err : out).write(payload);
                    if (payload.length < size) {
                        break;
                    }
                }
            }
        } catch (IOException e) {
            if (watchdog.isDone()) {
                throw new IOException("the exec did not start within " + timeoutSeconds + " s");
            }
            throw e;
        } finally {
            watchdog.cancel(false);
        }
        return new ExecMarker(
                null,
                new byte[0],
                new byte[0],
                out.toString(StandardCharsets.UTF_8) + err.toString(StandardCharsets.UTF_8));
    }

    private static int indexOf(ByteArrayOutputStream out, char c) {
        byte[] b = out.toByteArray();
        for (int i = 0; i < b.length; i++) {
            if (b[i] == c) {
                return i;
            }
        }
        return -1;
    }
}
