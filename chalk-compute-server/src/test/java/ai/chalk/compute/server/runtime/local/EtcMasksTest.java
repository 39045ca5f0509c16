package ai.chalk.compute.server.runtime.local;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The masks of a directory standing in for /etc: walked once, and again after each kind of change that matters. */
class EtcMasksTest {

    @TempDir
    Path etc;

    EtcMasks masks;

    @BeforeEach
    void open() {
        masks = new EtcMasks(etc);
    }

    @AfterEach
    void close() {
        masks.close();
    }

    @Test
    void whatOthersCannotReadIsMaskedAndTheWalkIsKeptUntilSomethingChanges() throws Exception {
        Files.writeString(etc.resolve("public"), "x");
        write(etc.resolve("private"), "rw-------");
        Files.createDirectories(etc.resolve("sub/deeper"));
        write(etc.resolve("sub/deeper/key"), "rw-r-----");
        Files.createDirectory(
                etc.resolve("closed"),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        chmod(etc.resolve("closed"), "rwx------");
        Files.createSymbolicLink(etc.resolve("link"), etc.resolve("private"));

        EtcMasks.Masks first = masks.current();
        assertThat(first.files()).containsExactlyInAnyOrder(path("private"), path("sub/deeper/key"));
        assertThat(first.dirs()).containsExactly(path("closed"));
        assertThat(masks.current()).isSameAs(first); // nothing changed: not walked again
        Files.readString(etc.resolve("public")); // reading changes nothing that matters
        assertThat(masks.current()).isSameAs(first);
    }

    @Test
    void aModeChangeACreateARenameAndADeleteAnywhereBelowAreEachSeen() throws Exception {
        Files.createDirectories(etc.resolve("sub/deeper"));
        Files.writeString(etc.resolve("sub/deeper/key"), "x");
        assertThat(masks.current().files()).isEmpty();

        chmod(etc.resolve("sub/deeper/key"), "rw-------");
        assertThat(masks.current().files()).containsExactly(path("sub/deeper/key"));

        Files.createDirectory(etc.resolve("new")); // made after the first walk: watched from the next one
        Files.writeString(etc.resolve("new/file"), "x");
        assertThat(masks.current().files()).containsExactly(path("sub/deeper/key"));
        chmod(etc.resolve("new/file"), "rw-------");
        assertThat(masks.current().files()).containsExactlyInAnyOrder(path("sub/deeper/key"), path("new/file"));

        write(etc.resolve("staged"), "rw-------");
        Files.move(etc.resolve("staged"), etc.resolve("sub/moved"));
        assertThat(masks.current().files()).contains(path("sub/moved")).doesNotContain(path("staged"));

        chmod(etc.resolve("sub"), "rwx------");
        assertThat(masks.current().dirs()).containsExactly(path("sub"));
        assertThat(masks.current().files()).containsExactly(path("new/file"));

        Files.delete(etc.resolve("new/file"));
        assertThat(masks.current().files()).isEmpty();
    }

    @Test
    void afterCloseEachCallWalks() throws Exception {
        masks.current();
        masks.close();
        write(etc.resolve("private"), "rw-------");
        assertThat(masks.current().files()).containsExactly(path("private"));
    }

    private String path(String relative) {
        return etc.resolve(relative).toString();
    }

    private static void write(Path file, String mode) throws Exception {
        Files.writeString(file, "secret");
        chmod(file, mode);
    }

    private static void chmod(Path p, String mode) throws Exception {
        Files.setPosixFilePermissions(p, PosixFilePermissions.fromString(mode));
    }
}
