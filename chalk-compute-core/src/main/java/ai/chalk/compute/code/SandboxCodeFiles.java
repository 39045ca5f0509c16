package ai.chalk.compute.code;

import ai.chalk.compute.files.FileEntry;
import ai.chalk.compute.files.SandboxFiles;
import java.nio.file.Path;
import java.util.List;

/** The {@code chalk} variant's files: the sandbox's {@link SandboxFiles}, streamed for uploads and downloads. */
final class SandboxCodeFiles implements CodeFiles {

    private final SandboxFiles files;

    SandboxCodeFiles(SandboxFiles files) {
        this.files = files;
    }

    @Override
    public byte[] readBytes(String path) {
        return files.readBytes(path);
    }

    @Override
    public void writeBytes(String path, byte[] content) {
        files.writeBytes(path, content);
    }

    @Override
    public List<FileEntry> list(String path) {
        return files.list(path);
    }

    @Override
    public String readText(String path) {
        return files.readText(path);
    }

    @Override
    public void writeText(String path, String content) {
        files.writeText(path, content);
    }

    @Override
    public void upload(Path local, String path) {
        files.upload(local, path);
    }

    @Override
    public void download(String path, Path local) {
        files.download(path, local);
    }
}
