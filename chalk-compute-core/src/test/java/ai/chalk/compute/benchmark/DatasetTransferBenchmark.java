package ai.chalk.compute.benchmark;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.dataset.Dataset;
import ai.chalk.compute.dataset.DatasetClient;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.Authentication;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Upload and download of a large Parquet file (1 GiB by default; {@code -Ddataset.benchmark.mib=N}) through
 * {@link DatasetClient} over TCP, the client in a JVM of its own with a 64 MiB heap ({@code -Xmx64m}): it could not
 * finish if it held the file. Prints both throughputs; never asserts timings. Run:
 * {@code ./mvnw -B -pl chalk-compute-core test -Dtest=DatasetTransferBenchmark}.
 */
@Tag("benchmark")
class DatasetTransferBenchmark {

    @Test
    void uploadAndDownloadWithABoundedClientHeap(@TempDir Path dataDir, @TempDir Path work) throws Exception {
        long mib = Long.getLong("dataset.benchmark.mib", 1024);
        Path file = work.resolve("big.parquet");
        long start = System.nanoTime();
        try (var c = DriverManager.getConnection("jdbc:duckdb:");
                Statement s = c.createStatement()) {
            // random bytes do not compress: the file is about as large as the data
            long rows = mib * (1 << 20) / 64;
            s.execute("COPY (SELECT range AS id, md5(range::VARCHAR) || md5((range * 7)::VARCHAR) AS payload"
                    + " FROM range(" + rows + ")) TO '" + file + "' (FORMAT parquet, COMPRESSION uncompressed)");
        }
        long size = Files.size(file);
        System.out.printf("generated %.0f MiB of Parquet in %.1f s%n", size / 1048576.0, seconds(start));
        try (ComputeServer server = ComputeServer.builder()
                .dataDir(dataDir)
                .port(0)
                .auth(Authentication.Mode.NONE)
                .build()
                .start()) {
            resetPeaks();
            Process client = new ProcessBuilder(
                            Path.of(System.getProperty("java.home"), "bin", "java")
                                    .toString(),
                            "-Xmx64m",
                            "-cp",
                            System.getProperty("java.class.path"),
                            TransferClient.class.getName(),
                            "127.0.0.1:" + server.port().orElseThrow(),
                            file.toString(),
                            work.resolve("down").toString())
                    .redirectErrorStream(true)
                    .start();
            String out = new String(client.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(client.waitFor(30, TimeUnit.MINUTES)).isTrue();
            System.out.print(out);
            assertThat(client.exitValue()).as(out).isZero();
            System.out.printf(
                    "server JVM (in this test JVM) peak heap during the transfers: %.0f MiB%n", peakHeap() / 1048576.0);
            assertThat(Files.size(work.resolve("down").resolve("part-00000.parquet")))
                    .isEqualTo(size);
        }
    }

    /** The client side, in a JVM of its own with a small heap. */
    public static final class TransferClient {
        public static void main(String[] args) throws Exception {
            Path file = Path.of(args[1]);
            double mib = Files.size(file) / 1048576.0;
            try (SandboxClient client = SandboxClient.connect(args[0])) {
                DatasetClient datasets = client.datasets();
                long t0 = System.nanoTime();
                Dataset d = datasets.upload("big", file);
                double up = seconds(t0);
                System.out.printf(
                        "upload of %.0f MiB (sha256, PUT, server checks): %.1f s, %.0f MiB/s%n", mib, up, mib / up);
                long t1 = System.nanoTime();
                List<Path> parts = datasets.download(d.revisionId(), Path.of(args[2]));
                double down = seconds(t1);
                System.out.printf("download of %.0f MiB: %.1f s, %.0f MiB/s%n", mib, down, mib / down);
                System.out.printf(
                        "client JVM: -Xmx64m, max heap %.0f MiB, peak heap used %.0f MiB, %d file(s)%n",
                        Runtime.getRuntime().maxMemory() / 1048576.0, peakHeap() / 1048576.0, parts.size());
            }
        }
    }

    private static void resetPeaks() {
        ManagementFactory.getMemoryPoolMXBeans().forEach(MemoryPoolMXBean::resetPeakUsage);
    }

    private static long peakHeap() {
        return ManagementFactory.getMemoryPoolMXBeans().stream()
                .filter(p -> p.getType() == MemoryType.HEAP)
                .mapToLong(p -> p.getPeakUsage().getUsed())
                .sum();
    }

    private static double seconds(long since) {
        return (System.nanoTime() - since) / 1e9;
    }
}
