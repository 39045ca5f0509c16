package ai.chalk.compute.server.runtime.docker;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
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
     * The most read before the marker, both streams together: the wrapper writes one short line first, and what it
     * runs is the sandbox's {@code /bin/sh}, which the sandbox may have replaced with a program writing without end
     * (read whole for 30 s, it filled the server's heap).
     */
    static final int MAX_BEFORE_MARKER = 1 << 20;

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
        boolean newline = false;
        try {
            InputStream in = connection.in();
            DataInputStream frames = new DataInputStream(in);
            byte[] buf = new byte[8192];
            while (!newline) {
                if (pty) {
                    int n = in.read(buf, 0, Math.min(buf.length, room(out, err)));
                    if (n < 0) {
                        break;
                    }
                    out.write(buf, 0, n);
                    newline = contains(buf, n);
                } else {
                    EngineFrame frame = EngineFrame.next(frames);
                    if (frame == null) {
                        break;
                    }
                    int size = frame.size();
                    if (size > room(out, err)) {
                        throw tooMuch();
                    }
                    byte[] payload = frames.readNBytes(size);
                    (frame.stderr() ? err : out).write(payload);
                    newline = !frame.stderr() && contains(payload, payload.length);
                    if (payload.length < size) {
                        break;
                    }
                }
                if (!newline && room(out, err) == 0) {
                    throw tooMuch();
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
        if (newline) {
            byte[] all = out.toByteArray();
            int at = indexOf(all, '\n');
            String line = new String(all, 0, at, StandardCharsets.UTF_8);
            if (line.endsWith("\r")) {
                line = line.substring(0, line.length() - 1);
            }
            return new ExecMarker(line, Arrays.copyOfRange(all, at + 1, all.length), err.toByteArray(), "");
        }
        return new ExecMarker(
                null,
                new byte[0],
                new byte[0],
                out.toString(StandardCharsets.UTF_8) + err.toString(StandardCharsets.UTF_8));
    }

    /** What may still be read before the marker: {@value #MAX_BEFORE_MARKER} bytes in all. */
    private static int room(ByteArrayOutputStream out, ByteArrayOutputStream err) {
        return Math.max(0, MAX_BEFORE_MARKER - out.size() - err.size());
    }

    private static IOException tooMuch() {
        return new IOException("the exec wrapper wrote more than " + MAX_BEFORE_MARKER
                + " bytes before saying whether the command started: the sandbox's /bin/sh is not a shell");
    }

    private static boolean contains(byte[] b, int length) {
        for (int i = 0; i < length; i++) {
            if (b[i] == '\n') {
                return true;
            }
        }
        return false;
    }

    private static int indexOf(byte[] b, char c) {
        for (int i = 0; i < b.length; i++) {
            if (b[i] == c) {
                return i;
            }
        }
        return -1;
    }
}
