package ai.chalk.compute.files;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.sandbox.Command;
import ai.chalk.compute.sandbox.ExecResult;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.Authentication;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A 1 GiB file up to a real sandbox and back, streamed: generated on the fly from a seeded random
 * stream (never stored on the host), hashed with SHA-256 while it is sent, hashed again in the
 * sandbox and while it is received; over the in-process transport and over TCP (HTTP/2 flow
 * control). The test JVM runs with {@code -Xmx512m} (see the module's pom) and also hosts the
 * server, so holding the file in memory anywhere would fail.
 */
class LargeFileTransferTest {

    static final long SIZE = 1L << 30;

    @ParameterizedTest(name = "over {0}")
    @ValueSource(strings = {"in-process", "tcp"})
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void oneGigabyteRoundTripsByHashWithBoundedHeap(String transport, @TempDir Path dataDir) throws Exception {
        try (ComputeServer server = ComputeServer.builder()
                        .dataDir(dataDir)
                        .port(0)
                        .auth(Authentication.Mode.NONE)
                        .build()
                        .start();
                SandboxClient client = transport.equals("tcp")
                        ? SandboxClient.connect("localhost:" + server.port().orElseThrow())
                        : SandboxClient.inProcess(server.inProcessName())) {
            Sandbox sandbox = client.create();
            SandboxFiles files = sandbox.files();
            MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
            System.gc();
            long heapBefore = memory.getHeapMemoryUsage().getUsed();
            HeapSampler sampler = new HeapSampler(memory);
            sampler.start();
            try {
                MessageDigest sent = MessageDigest.getInstance("SHA-256");
                long uploadStart = System.nanoTime();
                long uploaded;
                try (InputStream in = new DigestInputStream(new SeededStream(SIZE, 20261201L), sent)) {
                    uploaded = files.upload(in, "/big/one-gigabyte.bin");
                }
                double uploadSeconds = (System.nanoTime() - uploadStart) / 1e9;
                String sentHash = HexFormat.of().formatHex(sent.digest());
                assertThat(uploaded).isEqualTo(SIZE);
                assertThat(files.stat("/big/one-gigabyte.bin").size()).isEqualTo(SIZE);

                ExecResult inSandbox = sandbox.exec(Command.of("sha256sum", "/big/one-gigabyte.bin"));
                assertThat(inSandbox.stdoutText().split(" ")[0])
                        .as("the file in the sandbox")
                        .isEqualTo(sentHash);

                MessageDigest received = MessageDigest.getInstance("SHA-256");
                long downloadStart = System.nanoTime();
                long downloaded;
                try (OutputStream out = new DigestOutputStream(OutputStream.nullOutputStream(), received)) {
                    downloaded = files.download("/big/one-gigabyte.bin", out);
                }
                double downloadSeconds = (System.nanoTime() - downloadStart) / 1e9;
                assertThat(downloaded).isEqualTo(SIZE);
                assertThat(HexFormat.of().formatHex(received.digest()))
                        .as("the bytes downloaded")
                        .isEqualTo(sentHash);

                System.gc();
                long heapAfter = memory.getHeapMemoryUsage().getUsed();
                System.out.printf(
                        transport + ": 1 GiB upload %.1f s (%.0f MB/s), download %.1f s (%.0f MB/s); heap used before "
                                + "%d MB, after %d MB, peak sampled %d MB, max %d MB%n",
                        uploadSeconds,
                        SIZE / 1e6 / uploadSeconds,
                        downloadSeconds,
                        SIZE / 1e6 / downloadSeconds,
                        heapBefore >> 20,
                        heapAfter >> 20,
                        sampler.peak.get() >> 20,
                        memory.getHeapMemoryUsage().getMax() >> 20);
                assertThat(heapAfter - heapBefore)
                        .as("heap retained by the transfers")
                        .isLessThan(64L << 20);
                assertThat(sampler.peak.get())
                        .as("peak heap while 1 GiB went through")
                        .isLessThan(SIZE / 2);
            } finally {
                sampler.stop.set(true);
                sampler.join();
                sandbox.terminate();
            }
        }
    }

    /** Deterministic pseudo-random bytes, generated as they are read. */
    static final class SeededStream extends InputStream {
        private final SplittableRandom random;
        private long remaining;

        SeededStream(long size, long seed) {
            this.remaining = size;
            this.random = new SplittableRandom(seed);
        }

        @Override
        public int read() {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) {
            if (remaining == 0) {
                return -1;
            }
            int n = (int) Math.min(len, remaining);
            int i = 0;
            for (; i + 8 <= n; i += 8) {
                long v = random.nextLong();
                for (int k = 0; k < 8; k++) {
                    b[off + i + k] = (byte) (v >>> (8 * k));
                }
            }
            if (i < n) {
                long v = random.nextLong();
                for (; i < n; i++) {
                    b[off + i] = (byte) v;
                    v >>>= 8;
                }
            }
            remaining -= n;
            return n;
        }
    }

    /** Samples the used heap every few milliseconds and keeps the highest value. */
    static final class HeapSampler extends Thread {
        final AtomicLong peak = new AtomicLong();
        final AtomicBoolean stop = new AtomicBoolean();
        private final MemoryMXBean memory;

        HeapSampler(MemoryMXBean memory) {
            super("heap-sampler");
            setDaemon(true);
            this.memory = memory;
        }

        @Override
        public void run() {
            while (!stop.get()) {
                peak.accumulateAndGet(memory.getHeapMemoryUsage().getUsed(), Math::max);
                try {
                    Thread.sleep(5);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }
}
