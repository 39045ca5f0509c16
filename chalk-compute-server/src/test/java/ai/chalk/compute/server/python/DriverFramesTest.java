package ai.chalk.compute.server.python;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.server.exec.ByteBudget;
import ai.chalk.compute.server.exec.EnvironmentBytes;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.SequenceInputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * The driver's frames as a hostile sandbox can write them: every limit holds before anything is held, artifacts
 * past a limit are read through without being kept, and what is not the protocol is refused with a reason.
 */
class DriverFramesTest {

    private static byte[] frame(char type, byte[] payload) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        DataOutputStream data = new DataOutputStream(out);
        data.writeByte(type);
        data.writeInt(payload.length);
        data.write(payload);
        return out.toByteArray();
    }

    private static byte[] artifactHeader(long dataLength, String header) throws IOException {
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        DataOutputStream data = new DataOutputStream(out);
        data.writeByte('A');
        data.writeInt((int) (4 + h.length + dataLength));
        data.writeInt(h.length);
        data.write(h);
        return out.toByteArray();
    }

    private static final String PNG_HEADER =
            "{\"name\":\"fake.png\",\"mime\":\"image/png\",\"role\":\"display_data\",\"bundle\":1}";

    /** {@code length} zero bytes, made as they are read: nothing of them is ever in memory at once. */
    private static InputStream zeros(long length) {
        return new InputStream() {
            long left = length;

            @Override
            public int read() {
                return left-- > 0 ? 0 : -1;
            }

            @Override
            public int read(byte[] b, int off, int len) {
                if (left <= 0) {
                    return -1;
                }
                int n = (int) Math.min(len, left);
                java.util.Arrays.fill(b, off, off + n, (byte) 0);
                left -= n;
                return n;
            }
        };
    }

    @Test
    void anArtifactLargerThanTheLimitIsReadThroughAndReportedNotHeld() throws Exception {
        long huge = 3L << 30; // 3 GiB claimed and sent, through a 64 KiB buffer
        InputStream in = new SequenceInputStream(
                new SequenceInputStream(
                        new ByteArrayInputStream(artifactHeader(huge - 1, PNG_HEADER)), zeros(huge - 1)),
                new ByteArrayInputStream(frame('O', "after".getBytes(StandardCharsets.UTF_8))));
        EnvironmentBytes budget = new EnvironmentBytes(new ByteBudget("artifacts", 1 << 20));
        DriverFrames frames = new DriverFrames(in, budget.of("dev"));
        long heapBefore = usedHeap();
        DriverEvent skipped = frames.next(1000);
        assertThat(skipped)
                .isEqualTo(new DriverEvent.Skipped("fake.png", "larger than max_artifact_bytes (1000)", huge - 1));
        assertThat(usedHeap() - heapBefore).isLessThan(256L << 20);
        assertThat(budget.budget().used()).isZero();
        // the stream is still in step: the next frame reads as sent
        assertThat(frames.next(1000))
                .isInstanceOfSatisfying(
                        DriverEvent.Output.class,
                        o -> assertThat(new String(o.data(), StandardCharsets.UTF_8))
                                .isEqualTo("after"));
    }

    @Test
    void theServersOwnLimitHoldsWhateverTheCallAsks() throws Exception {
        long size = DriverFrames.MAX_ARTIFACT_BYTES + 1;
        InputStream in =
                new SequenceInputStream(new ByteArrayInputStream(artifactHeader(size, PNG_HEADER)), zeros(size));
        DriverEvent e = new DriverFrames(in, account(1L << 40)).next(Long.MAX_VALUE);
        assertThat(e)
                .isInstanceOfSatisfying(
                        DriverEvent.Skipped.class, s -> assertThat(s.reason()).contains("server's limit"));
    }

    @Test
    void artifactsPastTheEnvironmentsShareAreSkippedWhileAnotherEnvironmentsAreReadAndTheBudgetIsGivenBack()
            throws Exception {
        ByteBudget budget = new ByteBudget("artifacts", 2000);
        EnvironmentBytes shares = new EnvironmentBytes(budget);
        byte[] two = concat(
                concat(artifactHeader(800, PNG_HEADER), new byte[800]),
                concat(artifactHeader(800, PNG_HEADER), new byte[800]));
        DriverFrames dev = new DriverFrames(new ByteArrayInputStream(two), shares.of("dev"));
        DriverEvent.Artifact first = (DriverEvent.Artifact) dev.next(10_000);
        assertThat(first.reserved()).isEqualTo(800);
        assertThat(budget.used()).isEqualTo(800);
        // a client of dev's that does not read holds back dev's next artifact, not the budget's other half
        assertThat(dev.next(10_000))
                .isInstanceOfSatisfying(
                        DriverEvent.Skipped.class,
                        s -> assertThat(s.reason())
                                .contains("too many artifacts")
                                .contains("this environment holds 800 of the 1000 bytes"));
        DriverFrames prod = new DriverFrames(new ByteArrayInputStream(two), shares.of("prod"));
        DriverEvent.Artifact prods = (DriverEvent.Artifact) prod.next(10_000);
        assertThat(budget.used()).isEqualTo(1600);
        shares.of("dev").release(first.reserved());
        shares.of("prod").release(prods.reserved());
        assertThat(budget.used()).isZero();
        assertThat(shares.held("dev")).isZero();
    }

    @Test
    void whatIsNotTheProtocolIsRefusedWithAReason() throws Exception {
        assertRefused(frame('Z', new byte[0]), "unknown frame type");
        assertRefused(new byte[] {'O', 0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff}, "at most");
        assertRefused(new byte[] {'O', 0, 0, 1}, "inside a frame header");
        assertRefused(new byte[] {'O', 0, 0, 0, 10, 'a'}, "ended inside a frame");
        assertRefused(frame('C', "{broken".getBytes(StandardCharsets.UTF_8)), "not JSON");
        assertRefused(frame('C', "[1]".getBytes(StandardCharsets.UTF_8)), "not a JSON object");
        assertRefused(
                frame('C', "{\"id\":\"x\",\"status\":\"maybe\"}".getBytes(StandardCharsets.UTF_8)), "unknown status");
        assertRefused(frame('X', "{\"ename\":1}".getBytes(StandardCharsets.UTF_8)), "ename");
        assertRefused(
                concat(
                        artifactHeader(
                                1, "{\"name\":\"a\",\"mime\":\"not a type\",\"role\":\"display_data\",\"bundle\":1}"),
                        new byte[1]),
                "media type");
        assertRefused(
                concat(
                        artifactHeader(1, "{\"name\":\"a\",\"mime\":\"text/plain\",\"role\":\"boss\",\"bundle\":1}"),
                        new byte[1]),
                "role");
        // a header longer than its frame
        assertRefused(new byte[] {'A', 0, 0, 0, 8, 0, 0, 1, 0, 0, 0, 0, 0}, "artifact header");
    }

    @Test
    void longTextsInReportsAreClipped() throws Exception {
        String value = "v".repeat(200_000);
        byte[] report =
                ("{\"ename\":\"E\",\"evalue\":\"" + value + "\",\"traceback\":\"t\"}").getBytes(StandardCharsets.UTF_8);
        DriverEvent.CodeError e = (DriverEvent.CodeError)
                new DriverFrames(new ByteArrayInputStream(frame('X', report)), account(1)).next(0);
        assertThat(e.value()).hasSizeLessThan(70_000).endsWith("characters cut]");
    }

    private static void assertRefused(byte[] bytes, String reason) {
        assertThatThrownBy(() -> new DriverFrames(new ByteArrayInputStream(bytes), account(1 << 20)).next(100))
                .isInstanceOf(DriverProtocolException.class)
                .hasMessageContaining(reason);
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    private static long usedHeap() {
        Runtime r = Runtime.getRuntime();
        return r.totalMemory() - r.freeMemory();
    }

    /** An environment's account of a budget of {@code bytes}. */
    private static EnvironmentBytes.Account account(long bytes) {
        return new EnvironmentBytes(new ByteBudget("artifacts", bytes)).of("dev");
    }
}
