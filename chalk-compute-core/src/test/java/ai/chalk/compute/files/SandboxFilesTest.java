package ai.chalk.compute.files;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.sandbox.Command;
import ai.chalk.compute.sandbox.ExecResult;
import ai.chalk.compute.sandbox.ExecTimeoutException;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import io.grpc.Status;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The files API against a real server running real sandboxes (local runtime: the host's /usr and
 * /etc read-only, a private writable root, working directory /workspace, root without capabilities).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SandboxFilesTest {

    ComputeServer server;
    SandboxClient client;
    Sandbox sandbox;
    SandboxFiles files;

    @BeforeAll
    void start(@TempDir Path dataDir) throws Exception {
        server = ComputeServer.builder().dataDir(dataDir).build().start();
        client = SandboxClient.inProcess(server.inProcessName());
        sandbox = client.create();
        files = sandbox.files();
    }

    @AfterAll
    void stop() {
        if (client != null) {
            client.close();
        }
        if (server != null) {
            server.close();
        }
    }

    private String sh(String script, String... args) {
        List<String> argv = new java.util.ArrayList<>(List.of("-c", script, "sh"));
        argv.addAll(List.of(args));
        ExecResult result = sandbox.exec(Command.of("sh", argv));
        assertThat(result.success()).as("%s: %s", script, result.stderrText()).isTrue();
        return result.stdoutText();
    }

    // ---- reading and writing ----

    @Test
    void textAndBytesRoundTrip() {
        String text = "Hello World\nünïcødé ✓ — 日本語\n\ttabs and trailing spaces   \n";
        files.writeText("/data/test.txt", text);
        assertThat(files.readText("/data/test.txt")).isEqualTo(text);
        assertThat(sh("cat /data/test.txt")).isEqualTo(text);

        byte[] bytes = new byte[3 * 256 + 7];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) (i * 31);
        }
        files.writeBytes("/data/all-bytes.bin", bytes);
        assertThat(files.readBytes("/data/all-bytes.bin")).isEqualTo(bytes);
        assertThat(files.stat("/data/all-bytes.bin").size()).isEqualTo(bytes.length);

        files.writeBytes("/data/empty", new byte[0]);
        assertThat(files.readBytes("/data/empty")).isEmpty();
        assertThat(files.stat("/data/empty").size()).isZero();

        // ISO-8859-1, through the charset overload
        assertThat(files.readText("/data/all-bytes.bin", StandardCharsets.ISO_8859_1))
                .isEqualTo(new String(bytes, StandardCharsets.ISO_8859_1));
    }

    @Test
    void writeCreatesParentsReplacesContentAndKeepsPermissions() {
        files.writeText("/deep/a/b/c/file.txt", "first version, longer than the second");
        assertThat(files.stat("/deep/a/b/c").type()).isEqualTo(FileType.DIRECTORY);
        sh("chmod 750 /deep/a/b/c/file.txt");
        files.writeText("/deep/a/b/c/file.txt", "second");
        assertThat(files.readText("/deep/a/b/c/file.txt")).isEqualTo("second");
        assertThat(files.stat("/deep/a/b/c/file.txt").mode()).isEqualTo(0750);
    }

    @Test
    void relativePathsAreRelativeToTheWorkingDirectory() {
        files.writeText("relative/note.txt", "here");
        assertThat(sh("cat /workspace/relative/note.txt")).isEqualTo("here");
        assertThat(files.readText("relative/note.txt")).isEqualTo("here");
        assertThat(files.list("relative"))
                .extracting(FileEntry::name, FileEntry::path)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("note.txt", "relative/note.txt"));
        assertThat(files.exists("relative/note.txt")).isTrue();
        assertThat(files.stat("relative/note.txt").path()).isEqualTo("relative/note.txt");
    }

    // ---- directories and metadata ----

    @Test
    void listStatExistsMkdirRemoveMove() {
        Instant before = Instant.now().minusSeconds(5);
        files.mkdir("/tree/sub/deeper");
        files.mkdir("/tree/sub/deeper"); // already there: nothing happens
        files.writeText("/tree/b.txt", "bee");
        files.writeText("/tree/a.txt", "a");
        sh("ln -s a.txt /tree/link && ln -s nowhere /tree/dangling && mkfifo /tree/pipe && chmod 1777 /tree/sub");

        List<FileEntry> entries = files.list("/tree");
        assertThat(entries)
                .extracting(FileEntry::name)
                .containsExactly("a.txt", "b.txt", "dangling", "link", "pipe", "sub");
        FileEntry b = entries.get(1);
        assertThat(b.path()).isEqualTo("/tree/b.txt");
        assertThat(b.type()).isEqualTo(FileType.FILE);
        assertThat(b.isFile()).isTrue();
        assertThat(b.size()).isEqualTo(3);
        assertThat(b.mode()).isEqualTo(0644);
        assertThat(b.permissions())
                .containsExactlyInAnyOrder(
                        PosixFilePermission.OWNER_READ,
                        PosixFilePermission.OWNER_WRITE,
                        PosixFilePermission.GROUP_READ,
                        PosixFilePermission.OTHERS_READ);
        assertThat(b.modified()).isBetween(before, Instant.now().plusSeconds(5));
        assertThat(b.symlinkTarget()).isEmpty();
        assertThat(entries.get(3).type()).isEqualTo(FileType.SYMLINK);
        assertThat(entries.get(3).symlinkTarget()).contains("a.txt");
        assertThat(entries.get(2).symlinkTarget()).contains("nowhere");
        assertThat(entries.get(4).type()).isEqualTo(FileType.OTHER);
        assertThat(entries.get(5).type()).isEqualTo(FileType.DIRECTORY);
        assertThat(entries.get(5).mode()).isEqualTo(01777);
        assertThat(files.list("/tree/sub/deeper")).isEmpty();
        assertThat(files.list("/tree/")).extracting(FileEntry::path).contains("/tree/a.txt");

        // stat describes a link itself; list through a link to a directory lists the directory
        FileEntry link = files.stat("/tree/link");
        assertThat(link.name()).isEqualTo("link");
        assertThat(link.type()).isEqualTo(FileType.SYMLINK);
        assertThat(link.symlinkTarget()).contains("a.txt");
        sh("ln -s /tree/sub /tree/sublink");
        assertThat(files.list("/tree/sublink")).extracting(FileEntry::name).containsExactly("deeper");
        assertThat(files.stat("/").type()).isEqualTo(FileType.DIRECTORY);
        assertThat(files.stat("/").name()).isEqualTo("/");
        assertThat(files.stat("/tree/sub/").name()).isEqualTo("sub");

        assertThat(files.exists("/tree/a.txt")).isTrue();
        assertThat(files.exists("/tree/sub")).isTrue();
        assertThat(files.exists("/tree/dangling"))
                .as("a dangling link is still there")
                .isTrue();
        assertThat(files.exists("/tree/missing")).isFalse();
        assertThat(files.exists("/tree/a.txt/below-a-file")).isFalse();
        assertThat(files.exists("/no/such/dir")).isFalse();

        files.move("/tree/a.txt", "/tree/moved/renamed.txt");
        assertThat(files.exists("/tree/a.txt")).isFalse();
        assertThat(files.readText("/tree/moved/renamed.txt")).isEqualTo("a");
        files.move("/tree/b.txt", "/tree/moved/renamed.txt"); // replaces the file
        assertThat(files.readText("/tree/moved/renamed.txt")).isEqualTo("bee");
        files.move("/tree/sub", "/tree/sub2");
        assertThat(files.list("/tree/sub2")).extracting(FileEntry::name).containsExactly("deeper");

        files.remove("/tree/moved/renamed.txt");
        files.remove("/tree/moved"); // empty directory
        files.remove("/tree/link"); // the link, not its target
        assertThat(files.exists("/tree/link")).isFalse();
        files.remove("/tree/dangling");
        assertThatThrownBy(() -> files.remove("/tree/sub2"))
                .isInstanceOf(SandboxFileException.class)
                .hasMessageContaining("'/tree/sub2'")
                .hasMessageContaining("not empty")
                .satisfies(e ->
                        assertThat(((SandboxFileException) e).statusCode()).isEqualTo(Status.Code.FAILED_PRECONDITION));
        files.remove("/tree/sub2", true);
        files.remove("/tree/sublink");
        files.remove("/tree/pipe");
        assertThat(files.list("/tree")).isEmpty();
        files.remove("/tree", true);
        assertThat(files.exists("/tree")).isFalse();
    }

    @Test
    void oddFileNamesWork() {
        List<String> names = List.of(
                "with space.txt",
                "quote'single",
                "quote\"double",
                "new\nline",
                "-leading-dash",
                "--",
                "-rf",
                "!",
                "(",
                "$(touch pwned)",
                "`touch pwned`",
                "star*",
                "back\\slash",
                "tab\tname",
                "ünïcødé ✓.txt",
                "semi;colon&amp|pipe>redir<",
                " leading space",
                "trailing space ",
                ".hidden",
                "~tilde",
                "%s%n%x",
                "\\0");
        String dir = "odd dir/sub\nline";
        for (String name : names) {
            files.writeText(dir + "/" + name, "content of " + name);
        }
        assertThat(files.list(dir)).extracting(FileEntry::name).containsExactlyInAnyOrderElementsOf(names);
        for (String name : names) {
            String path = dir + "/" + name;
            assertThat(files.readText(path)).as(path).isEqualTo("content of " + name);
            assertThat(files.exists(path)).as(path).isTrue();
            FileEntry entry = files.stat(path);
            assertThat(entry.name()).isEqualTo(name);
            assertThat(entry.size()).isEqualTo(("content of " + name).getBytes(StandardCharsets.UTF_8).length);
            files.move(path, dir + "/moved/" + name);
        }
        assertThat(files.list(dir + "/moved")).extracting(FileEntry::name).containsExactlyInAnyOrderElementsOf(names);
        // names starting with a dash work relative to the working directory too
        files.writeText("-n", "dash");
        assertThat(files.readText("-n")).isEqualTo("dash");
        assertThat(files.stat("-n").name()).isEqualTo("-n");
        files.remove("-n");
        for (String name : names) {
            files.remove(dir + "/moved/" + name);
        }
        assertThat(files.list(dir + "/moved")).isEmpty();
        files.remove("odd dir", true);
        assertThat(sh("find / -xdev -name pwned 2>/dev/null; true"))
                .as("nothing in a name was run")
                .isEmpty();
    }

    // ---- errors ----

    @Test
    void missingPathsRaiseFileNotFoundNamingThePath() {
        String missing = "/workspace/no such dir/missing.txt";
        List<ThrowingCall> calls = List.of(
                () -> files.readText(missing),
                () -> files.readBytes(missing),
                () -> files.list(missing),
                () -> files.stat(missing),
                () -> files.remove(missing),
                () -> files.remove(missing, true),
                () -> files.move(missing, "/workspace/elsewhere"),
                () -> files.download(missing, OutputStream.nullOutputStream()));
        for (ThrowingCall call : calls) {
            assertThatThrownBy(call::run)
                    .isInstanceOf(FileNotFoundInSandboxException.class)
                    .isInstanceOf(ChalkComputeException.class)
                    .hasMessageContaining("'" + missing + "'")
                    .hasMessageContaining("no such file or directory")
                    .satisfies(e -> {
                        FileNotFoundInSandboxException f = (FileNotFoundInSandboxException) e;
                        assertThat(f.path()).isEqualTo(missing);
                        assertThat(f.statusCode()).isEqualTo(Status.Code.NOT_FOUND);
                    });
        }
        assertThat(files.exists(missing)).isFalse();
    }

    @Test
    void permissionErrorsNameThePath() {
        // the host's /usr is mounted read-only
        assertThatThrownBy(() -> files.writeText("/usr/chalk-test.txt", "x"))
                .isInstanceOf(FileAccessDeniedException.class)
                .hasMessage("PERMISSION_DENIED: cannot write '/usr/chalk-test.txt': read-only file system");
        assertThatThrownBy(() -> files.mkdir("/usr/chalk-test-dir/sub"))
                .isInstanceOf(FileAccessDeniedException.class)
                .hasMessageContaining("'/usr/chalk-test-dir/sub'");
        assertThatThrownBy(() -> files.remove("/usr/bin/env"))
                .isInstanceOf(FileAccessDeniedException.class)
                .hasMessageContaining("'/usr/bin/env'");
        // /etc/shadow is masked and unreadable
        assertThatThrownBy(() -> files.readText("/etc/shadow"))
                .isInstanceOf(FileAccessDeniedException.class)
                .hasMessage("PERMISSION_DENIED: cannot read '/etc/shadow': permission denied")
                .satisfies(e ->
                        assertThat(((FileAccessDeniedException) e).stderr()).contains("Permission denied"));
        // the sandbox's root has no capabilities, so mode 000 locks even its own files
        sh("mkdir -p /locked && echo secret > /locked/file && chmod 000 /locked/file");
        assertThatThrownBy(() -> files.readText("/locked/file"))
                .isInstanceOf(FileAccessDeniedException.class)
                .hasMessage("PERMISSION_DENIED: cannot read '/locked/file': permission denied")
                .satisfies(e ->
                        assertThat(((SandboxFileException) e).statusCode()).isEqualTo(Status.Code.PERMISSION_DENIED));
        assertThatThrownBy(() -> files.download("/locked/file", new ByteArrayOutputStream()))
                .isInstanceOf(FileAccessDeniedException.class);
        sh("chmod 000 /locked");
        assertThatThrownBy(() -> files.list("/locked"))
                .isInstanceOf(FileAccessDeniedException.class)
                .hasMessageContaining("'/locked'");
        assertThatThrownBy(() -> files.exists("/locked/file"))
                .as("an unsearchable parent makes the answer unknown, not false")
                .isInstanceOf(FileAccessDeniedException.class);
        sh("chmod 755 /locked");
    }

    @Test
    void wrongFileTypesAreClearErrors() {
        files.mkdir("/types/dir");
        files.writeText("/types/file", "x");
        assertThatThrownBy(() -> files.readText("/types/dir"))
                .isInstanceOf(WrongFileTypeException.class)
                .hasMessage("FAILED_PRECONDITION: cannot read '/types/dir': it is a directory");
        assertThatThrownBy(() -> files.download("/types/dir", OutputStream.nullOutputStream()))
                .isInstanceOf(WrongFileTypeException.class)
                .hasMessageContaining("it is a directory");
        assertThatThrownBy(() -> files.writeText("/types/dir", "x"))
                .isInstanceOf(WrongFileTypeException.class)
                .hasMessage("FAILED_PRECONDITION: cannot write '/types/dir': it is a directory");
        assertThatThrownBy(() -> files.list("/types/file"))
                .isInstanceOf(WrongFileTypeException.class)
                .hasMessage("FAILED_PRECONDITION: cannot list '/types/file': it is not a directory");
        assertThatThrownBy(() -> files.writeText("/types/file/below", "x"))
                .isInstanceOf(WrongFileTypeException.class)
                .hasMessageContaining("'/types/file/below'");
        assertThatThrownBy(() -> files.mkdir("/types/file"))
                .isInstanceOf(WrongFileTypeException.class)
                .hasMessageContaining("'/types/file'");
        assertThatThrownBy(() -> files.move("/types/file", "/types/dir/../dir"))
                .isInstanceOf(WrongFileTypeException.class)
                .hasMessageContaining("'/types/file'")
                .hasMessageContaining("'/types/dir/../dir'");
        assertThat(files.readText("/types/file"))
                .as("a failed move changes nothing")
                .isEqualTo("x");
    }

    @Test
    void invalidPathsAreRejectedBeforeAnythingRuns() {
        assertThatThrownBy(() -> files.readText("")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> files.readText("a\0b")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> files.readText(null)).isInstanceOf(NullPointerException.class);
    }

    // ---- streaming ----

    @Test
    void uploadAndDownloadLocalFiles(@TempDir Path local) throws IOException {
        byte[] data = new byte[5 * FileTransfer.CHUNK + 12345]; // several chunks and a partial one
        new java.util.Random(42).nextBytes(data);
        Path source = Files.write(local.resolve("source.bin"), data);
        assertThat(files.upload(source, "/transfer/nested/copy.bin")).isEqualTo(data.length);
        assertThat(sh("sha256sum < /transfer/nested/copy.bin").split(" ")[0]).isEqualTo(sha256(data));

        Path target = local.resolve("out/deeper/copy.bin");
        assertThat(files.download("/transfer/nested/copy.bin", target)).isEqualTo(data.length);
        assertThat(Files.readAllBytes(target)).isEqualTo(data);

        // an exact multiple of the chunk size, and an empty stream
        byte[] exact = java.util.Arrays.copyOf(data, 2 * FileTransfer.CHUNK);
        assertThat(files.upload(new java.io.ByteArrayInputStream(exact), "/transfer/exact.bin"))
                .isEqualTo(exact.length);
        assertThat(files.readBytes("/transfer/exact.bin")).isEqualTo(exact);
        assertThat(files.upload(java.io.InputStream.nullInputStream(), "/transfer/empty.bin"))
                .isZero();
        assertThat(files.stat("/transfer/empty.bin").size()).isZero();

        // a failed download leaves no local file behind, and keeps an existing one intact
        Files.writeString(target, "keep me");
        assertThatThrownBy(() -> files.download("/transfer/missing.bin", target))
                .isInstanceOf(FileNotFoundInSandboxException.class);
        assertThat(Files.readString(target)).isEqualTo("keep me");
        try (var listing = Files.list(target.getParent())) {
            assertThat(listing).containsExactly(target);
        }

        // a local file that cannot be read is a local error
        assertThatThrownBy(() -> files.upload(local.resolve("missing.bin"), "/transfer/x"))
                .isInstanceOf(UncheckedIOException.class)
                .hasMessageContaining("missing.bin");
        // an upload the sandbox refuses fails fast with the sandbox's reason
        assertThatThrownBy(() -> files.upload(source, "/usr/copy.bin"))
                .isInstanceOf(FileAccessDeniedException.class)
                .hasMessageContaining("read-only file system");
    }

    @Test
    void aTimeoutStopsAnEndlessTransfer() {
        long start = System.nanoTime();
        assertThatThrownBy(() ->
                        files.withTimeout(Duration.ofSeconds(1)).download("/dev/zero", OutputStream.nullOutputStream()))
                .isInstanceOf(ExecTimeoutException.class);
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(20));
    }

    static String sha256(byte[] data) {
        try {
            return java.util.HexFormat.of()
                    .formatHex(
                            java.security.MessageDigest.getInstance("SHA-256").digest(data));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    @FunctionalInterface
    interface ThrowingCall {
        void run() throws Exception;
    }
}
