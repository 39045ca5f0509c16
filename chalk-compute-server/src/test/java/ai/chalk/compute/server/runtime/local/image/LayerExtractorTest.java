package ai.chalk.compute.server.runtime.local.image;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Unpacking layers as root onto a real directory: whiteouts, and links that try to lead out of it. */
class LayerExtractorTest {

    @TempDir
    Path root;

    @TempDir
    Path outside;

    private void apply(OciFixtures.Layer layer) throws IOException {
        new LayerExtractor(root).apply(new ByteArrayInputStream(layer.bytes()), "test");
    }

    @Test
    void aSparseFileIsRefusedRatherThanWrittenOut() throws Exception {
        // a tar reader makes a sparse entry's zeros itself: a layer of a few kilobytes stood for a terabyte written
        Path files = java.nio.file.Files.createDirectories(outside.resolve("files"));
        try (java.io.RandomAccessFile f =
                new java.io.RandomAccessFile(files.resolve("huge").toFile(), "rw")) {
            f.setLength(1L << 30);
            f.seek((1L << 30) - 1);
            f.write('x');
        }
        Path tar = outside.resolve("layer.tar");
        Process p = new ProcessBuilder("tar", "--sparse", "-C", files.toString(), "-cf", tar.toString(), "huge")
                .redirectErrorStream(true)
                .start();
        assertThat(p.waitFor())
                .as(new String(p.getInputStream().readAllBytes()))
                .isZero();
        assertThat(Files.size(tar)).as("the archive's size").isLessThan(1 << 20);
        try (var in = Files.newInputStream(tar)) {
            assertThatThrownBy(() -> new LayerExtractor(root).apply(in, "test"))
                    .isInstanceOf(ImageSourceException.class)
                    .hasMessageContaining("sparse file (huge)");
        }
        assertThat(root.resolve("huge")).doesNotExist();
    }

    @Test
    void aSymlinkPlantedByOneLayerIsReplacedNotWrittenThrough() throws Exception {
        apply(new OciFixtures.Layer().symlink("evil", outside.toString()).symlink("rel", "../../../" + outside));
        apply(new OciFixtures.Layer().file("evil/owned", "pwned", 0644).file("rel/owned", "pwned", 0644));
        assertThat(outside.resolve("owned")).doesNotExist();
        assertThat(root.resolve("evil")).isDirectory();
        assertThat(Files.isSymbolicLink(root.resolve("evil"))).isFalse();
        assertThat(root.resolve("evil/owned")).hasContent("pwned");
        assertThat(root.resolve("rel/owned")).hasContent("pwned");
    }

    @Test
    void aSymlinkInTheSameLayerIsNotFollowedEither() throws Exception {
        apply(new OciFixtures.Layer()
                .symlink("x", outside.toString())
                .file("x/owned", "pwned", 0644)
                .symlink("f", outside.resolve("target").toString())
                .file("f", "replaced", 0600));
        assertThat(outside).isEmptyDirectory();
        assertThat(Files.isSymbolicLink(root.resolve("f"))).isFalse();
        assertThat(root.resolve("f")).hasContent("replaced");
    }

    @Test
    void namesAndHardLinksThatClimbOutAreRefused() throws Exception {
        Files.writeString(outside.resolve("secret"), "s");
        assertThatThrownBy(() -> apply(new OciFixtures.Layer().file("../escape", "x", 0644)))
                .hasMessageContaining("climbs out");
        assertThatThrownBy(() -> apply(new OciFixtures.Layer().hardlink("link", "../../../../" + outside + "/secret")))
                .hasMessageContaining("climbs out");
        apply(new OciFixtures.Layer().symlink("dir", outside.toString()));
        assertThatThrownBy(() -> apply(new OciFixtures.Layer().hardlink("link", "dir/secret")))
                .hasMessageContaining("not in the image");
        assertThat(root.resolve("link")).doesNotExist();
        assertThat(Files.readAttributes(outside.resolve("secret"), "unix:nlink"))
                .containsEntry("nlink", 1);
    }

    @Test
    void whiteoutsAndOpaqueDirectoriesHideLowerLayers() throws Exception {
        apply(new OciFixtures.Layer()
                .dir("gone")
                .file("gone/a", "a", 0644)
                .file("file", "f", 0644)
                .dir("opaque")
                .file("opaque/old", "o", 0644)
                .dir("opaque/sub")
                .file("opaque/sub/old", "o", 0644)
                .file("kept", "k", 0600));
        apply(new OciFixtures.Layer()
                .file(".wh.gone", "", 0)
                .file(".wh.file", "", 0)
                .file("opaque/new", "n", 0644)
                .file("opaque/.wh..wh..opq", "", 0));
        assertThat(root.resolve("gone")).doesNotExist();
        assertThat(root.resolve("file")).doesNotExist();
        assertThat(root.resolve("opaque"))
                .isDirectoryContaining(p -> p.getFileName().toString().equals("new"));
        try (var s = Files.list(root.resolve("opaque"))) {
            assertThat(s.map(p -> p.getFileName().toString())).containsExactly("new");
        }
        assertThat(root.resolve("kept")).hasContent("k");
        assertThat(Files.getAttribute(root.resolve("kept"), "unix:mode", LinkOption.NOFOLLOW_LINKS))
                .isEqualTo(0100600);
    }

    @Test
    void modesWithSetIdBitsAndHardLinksInsideAreKept() throws Exception {
        apply(new OciFixtures.Layer().file("bin/tool", "#!/bin/sh\n", 04755).hardlink("bin/same", "bin/tool"));
        assertThat((int) Files.getAttribute(root.resolve("bin/tool"), "unix:mode") & 07777)
                .isEqualTo(04755);
        assertThat(Files.getAttribute(root.resolve("bin/same"), "unix:ino"))
                .isEqualTo(Files.getAttribute(root.resolve("bin/tool"), "unix:ino"));
    }
}
