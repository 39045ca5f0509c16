package ai.chalk.compute.server.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.server.blob.BlobDigest;
import ai.chalk.compute.server.blob.BlobStore;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Materialising code snapshots from blobs: layout, class path order, missing blobs, and zips that try to escape. */
@Tag("alone")
class CodeSnapshotsTest {

    @TempDir
    Path dir;

    private static byte[] zip(String entry, String content) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (ZipOutputStream z = new ZipOutputStream(out)) {
            z.putNextEntry(new ZipEntry(entry));
            z.write(content.getBytes(StandardCharsets.UTF_8));
            z.closeEntry();
        }
        return out.toByteArray();
    }

    /** A zip holding {@code zeros.bin}, {@code mebibytes} MiB of zeros. */
    private static byte[] zeros(int mebibytes) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (ZipOutputStream z = new ZipOutputStream(out)) {
            z.putNextEntry(new ZipEntry("zeros.bin"));
            byte[] megabyte = new byte[1 << 20];
            for (int i = 0; i < mebibytes; i++) {
                z.write(megabyte);
            }
            z.closeEntry();
        }
        return out.toByteArray();
    }

    private static String entry(String name, String kind, BlobDigest d, int size) {
        return "{\"name\":\"" + name + "\",\"kind\":\"" + kind + "\",\"digest\":\"" + d + "\",\"size\":" + size + "}";
    }

    /** Stores the manifest of one class directory: the zip {@code bytes}, stored as {@code zip}, named {@code name}. */
    private static BlobDigest manifest(BlobStore blobs, String name, BlobDigest zip, byte[] bytes) throws IOException {
        return blobs.put(
                ("{\"entries\":[" + entry(name, "dir", zip, bytes.length) + "]}").getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void materialisesOncePerDigestInClassPathOrder() throws Exception {
        BlobStore blobs = new BlobStore(dir.resolve("blobs"));
        CodeSnapshots snapshots = new CodeSnapshots(blobs, dir.resolve("code"));
        byte[] classes = zip("a/b/C.class", "class bytes");
        byte[] jar = "not really a jar".getBytes(StandardCharsets.UTF_8);
        BlobDigest c = blobs.put(classes);
        BlobDigest j = BlobDigest.parse("d", "sha256:" + "0".repeat(64));
        String manifest = "{\"entries\":[" + entry("000-classes.zip", "dir", c, classes.length) + ","
                + entry("001-lib.jar", "jar", j, jar.length) + "]}";
        BlobDigest m = blobs.put(manifest.getBytes(StandardCharsets.UTF_8));
        assertThat(snapshots.missing(m)).containsExactly(j);

        j = blobs.put(jar);
        manifest = "{\"entries\":[" + entry("000-classes.zip", "dir", c, classes.length) + ","
                + entry("001-lib.jar", "jar", j, jar.length) + "]}";
        m = blobs.put(manifest.getBytes(StandardCharsets.UTF_8));
        assertThat(snapshots.missing(m)).isEmpty();
        CodeSnapshots.Snapshot s = snapshots.materialise(m, "/chalk/code");
        assertThat(s.dir()).isEqualTo(dir.resolve("code").resolve(m.hex()));
        assertThat(s.classPath()).containsExactly("/chalk/code/000-classes.zip", "/chalk/code/001-lib.jar");
        assertThat(Files.readString(s.dir().resolve("000-classes.zip/a/b/C.class")))
                .isEqualTo("class bytes");
        assertThat(Files.readAllBytes(s.dir().resolve("001-lib.jar"))).isEqualTo(jar);
        assertThat(snapshots.materialise(m, "/chalk/code").dir()).isEqualTo(s.dir());
    }

    @Test
    void aManifestIsReadAnEntryAtATimeAndRefusedPastItsEntries() throws Exception {
        BlobStore blobs = new BlobStore(dir.resolve("blobs"));
        CodeSnapshots snapshots = new CodeSnapshots(blobs, dir.resolve("code"));
        BlobDigest j = BlobDigest.parse("d", "sha256:" + "0".repeat(64));
        // unknown fields are skipped, the entries' own read
        String ok = "{\"version\":{\"nested\":[1,2,{\"x\":\"y\"}]},\"entries\":[{\"extra\":[[[]]],"
                + entry("000-lib.jar", "jar", j, 3).substring(1) + "]}";
        assertThat(snapshots
                        .manifest(blobs.put(ok.getBytes(StandardCharsets.UTF_8)))
                        .entries())
                .extracting(CodeManifest.Entry::name)
                .containsExactly("000-lib.jar");
        // a deployer's 300,000 empty entries (read as a tree, half a gigabyte of heap per deploy call)
        String many = "{\"entries\":[" + "{},".repeat(300_000) + "{}]}";
        assertThat(many.length()).isLessThan((int) CodeSnapshots.MAX_MANIFEST_BYTES);
        BlobDigest m = blobs.put(many.getBytes(StandardCharsets.UTF_8));
        assertThatThrownBy(() -> snapshots.manifest(m))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> assertThat(e.getStatus().getDescription()).contains("is not a valid manifest"));
        StringBuilder tooMany = new StringBuilder("{\"entries\":[");
        for (int i = 0; i <= CodeManifest.MAX_ENTRIES; i++) {
            tooMany.append(i == 0 ? "" : ",").append(entry(String.format("%03d-lib%d.jar", i % 1000, i), "jar", j, 3));
        }
        BlobDigest t = blobs.put(tooMany.append("]}").toString().getBytes(StandardCharsets.UTF_8));
        assertThatThrownBy(() -> snapshots.manifest(t))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> assertThat(e.getStatus().getDescription())
                                .contains("more than " + CodeManifest.MAX_ENTRIES + " entries"));
    }

    @Test
    void zipsPointingOutsideTheirDirectoryAreRefused() throws Exception {
        BlobStore blobs = new BlobStore(dir.resolve("blobs"));
        CodeSnapshots snapshots = new CodeSnapshots(blobs, dir.resolve("code"));
        byte[] evil = zip("../../escaped.txt", "gotcha");
        BlobDigest e = blobs.put(evil);
        BlobDigest m = manifest(blobs, "000-evil.zip", e, evil);
        assertThatThrownBy(() -> snapshots.materialise(m, "/chalk/code"))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("points outside its directory");
        try (var files = Files.walk(dir)) {
            assertThat(files.filter(p -> p.getFileName().toString().equals("escaped.txt"))
                            .toList())
                    .isEmpty();
        }
        assertThat(Files.exists(dir.resolve("code").resolve(m.hex()))).isFalse();
    }

    /**
     * A zip of 200 MiB of zeros is a blob of about 200 KB: unpacked without bound, a deployer's few hundred kilobytes
     * wrote gigabytes onto the server's disk. Refused once it has written its grace and a hundred times what was read of
     * it, and nothing of it stays.
     */
    @Test
    void aZipBombIsRefusedAndNothingOfItStays() throws Exception {
        BlobStore blobs = new BlobStore(dir.resolve("blobs"));
        CodeSnapshots snapshots = new CodeSnapshots(blobs, dir.resolve("code"));
        byte[] bomb = zeros(200);
        assertThat(bomb.length).isLessThan(1 << 20);
        BlobDigest b = blobs.put(bomb);
        BlobDigest m = manifest(blobs, "000-bomb.zip", b, bomb);
        assertThatThrownBy(() -> snapshots.materialise(m, "/chalk/code"))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("000-bomb.zip")
                .hasMessageContaining("expands to more than " + DirectoryZip.MAX_RATIO + " times its size");
        assertThat(leftUnder(dir.resolve("code"))).isEmpty();
    }

    /**
     * Unpacking stops before the disk would be left with less than its reserve, whatever the zip's ratio (here 48 MiB
     * that do not compress, with a reserve of all but 16 MiB of what is free), and nothing of it stays.
     */
    @Test
    void unpackingStopsBeforeTheDisksReserve() throws Exception {
        BlobStore blobs = new BlobStore(dir.resolve("blobs"));
        byte[] noise = new byte[48 << 20];
        new java.util.Random(7).nextBytes(noise);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (ZipOutputStream z = new ZipOutputStream(out)) {
            ZipEntry e = new ZipEntry("noise.bin");
            e.setMethod(ZipEntry.STORED);
            e.setSize(noise.length);
            java.util.zip.CRC32 crc = new java.util.zip.CRC32();
            crc.update(noise);
            e.setCrc(crc.getValue());
            z.putNextEntry(e);
            z.write(noise);
            z.closeEntry();
        }
        byte[] zip = out.toByteArray();
        BlobDigest b = blobs.put(zip);
        BlobDigest m = manifest(blobs, "000-noise.zip", b, zip);
        long reserve = Files.getFileStore(dir).getUsableSpace() - (16L << 20);
        CodeSnapshots snapshots = new CodeSnapshots(blobs, dir.resolve("code"), reserve);
        assertThatThrownBy(() -> snapshots.materialise(m, "/chalk/code"))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("000-noise.zip")
                .hasMessageContaining("MiB free");
        assertThat(leftUnder(dir.resolve("code"))).isEmpty();
    }

    /**
     * The bound is the snapshot's, not each zip's: a manifest naming one small bomb under several entries (40 MiB of
     * zeros each, within one zip's grace) is refused once they have written the snapshot's grace between them.
     */
    @Test
    void theSnapshotsZipsShareOneBound() throws Exception {
        BlobStore blobs = new BlobStore(dir.resolve("blobs"));
        CodeSnapshots snapshots = new CodeSnapshots(blobs, dir.resolve("code"));
        byte[] small = zeros(40);
        BlobDigest b = blobs.put(small);
        BlobDigest one = manifest(blobs, "000-a.zip", b, small);
        assertThat(Files.size(snapshots.materialise(one, "/chalk/code").dir().resolve("000-a.zip/zeros.bin")))
                .isEqualTo(40 << 20);
        BlobDigest two = blobs.put(("{\"entries\":[" + entry("000-a.zip", "dir", b, small.length) + ","
                        + entry("001-b.zip", "dir", b, small.length) + "]}")
                .getBytes(StandardCharsets.UTF_8));
        assertThatThrownBy(() -> snapshots.materialise(two, "/chalk/code"))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("001-b.zip")
                .hasMessageContaining("with the snapshot's other entries");
        assertThat(Files.exists(dir.resolve("code").resolve(two.hex()))).isFalse();
    }

    /** A name of many short parts would make a directory per part: names past the bound are refused. */
    @Test
    void aNameTooLongIsRefused() throws Exception {
        BlobStore blobs = new BlobStore(dir.resolve("blobs"));
        CodeSnapshots snapshots = new CodeSnapshots(blobs, dir.resolve("code"));
        byte[] deep = zip("a/".repeat(600) + "f", "x");
        BlobDigest d = blobs.put(deep);
        BlobDigest m = manifest(blobs, "000-deep.zip", d, deep);
        assertThatThrownBy(() -> snapshots.materialise(m, "/chalk/code"))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("a name of 1201 characters");
        assertThat(leftUnder(dir.resolve("code"))).isEmpty();
    }

    /**
     * One digest's unpack holds only the callers of that digest. There was one lock for every digest, and deploys and
     * replica starts hold it: one tenant's long unpack (here one whose zip is a pipe nothing writes to yet) held every
     * other tenant's code.
     */
    @Test
    void oneDigestsUnpackDoesNotHoldAnothers() throws Exception {
        BlobStore blobs = new BlobStore(dir.resolve("blobs"));
        CodeSnapshots snapshots = new CodeSnapshots(blobs, dir.resolve("code"));
        byte[] slowZip = zip("a/Slow.class", "slow");
        BlobDigest slow = blobs.put(slowZip);
        Path pipe = blobs.path(slow);
        PipeBlob.replace(pipe);
        BlobDigest slowManifest = manifest(blobs, "000-slow.zip", slow, slowZip);
        byte[] quickZip = zip("b/Quick.class", "quick");
        BlobDigest quick = blobs.put(quickZip);
        BlobDigest quickManifest = manifest(blobs, "000-quick.zip", quick, quickZip);
        var pool = Executors.newFixedThreadPool(3);
        try {
            var first = pool.submit(() -> snapshots.materialise(slowManifest, "/chalk/code"));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (unpacking().isEmpty()) {
                assertThat(System.nanoTime()).as("the slow unpack starting").isLessThan(deadline);
                Thread.sleep(10);
            }
            var second = pool.submit(() -> snapshots.materialise(slowManifest, "/chalk/code"));
            Thread.sleep(200);
            assertThat(unpacking())
                    .as("the slow digest unpacks once: its second caller waits for the first")
                    .hasSize(1);
            var other = pool.submit(() -> snapshots.materialise(quickManifest, "/chalk/code"));
            assertThat(Files.readString(other.get(10, TimeUnit.SECONDS).dir().resolve("000-quick.zip/b/Quick.class")))
                    .isEqualTo("quick");
            assertThat(first).as("the slow unpack, still reading its zip").isNotDone();
            assertThat(second)
                    .as("the same digest's second caller, waiting for the first")
                    .isNotDone();
            PipeBlob.feed(pipe, slowZip);
            assertThat(first.get(10, TimeUnit.SECONDS).dir())
                    .isEqualTo(second.get(10, TimeUnit.SECONDS).dir());
            assertThat(Files.readString(first.get().dir().resolve("000-slow.zip/a/Slow.class")))
                    .isEqualTo("slow");
        } finally {
            PipeBlob.feed(pipe, slowZip); // ends the slow unpack if an assertion failed before
            pool.shutdownNow();
        }
    }

    /** The snapshots being unpacked now (their temporary directories). */
    private List<Path> unpacking() throws IOException {
        try (var files = Files.list(dir.resolve("code"))) {
            return files.filter(p -> p.getFileName().toString().startsWith(".tmp-"))
                    .toList();
        }
    }

    private static List<Path> leftUnder(Path code) throws IOException {
        try (var files = Files.list(code)) {
            return files.toList();
        }
    }

    @Test
    void manifestsWithUnsafeNamesAreRefused() {
        BlobDigest d = BlobDigest.parse("d", "sha256:" + "1".repeat(64));
        for (String bad : List.of("000-../x", "../001-x.jar", "x.jar")) {
            String json = "{\"entries\":[" + entry(bad, "jar", d, 1) + "]}";
            assertThatThrownBy(() -> CodeManifest.parse(d, json.getBytes(StandardCharsets.UTF_8)))
                    .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
                        assertThat(e.getStatus().getDescription()).contains("is not a valid manifest");
                    });
        }
    }
}
