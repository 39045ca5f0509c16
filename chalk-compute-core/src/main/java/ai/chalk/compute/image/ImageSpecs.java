package ai.chalk.compute.image;

import ai.chalk.compute.proto.sandbox.v1.AddFileStep;
import ai.chalk.compute.proto.sandbox.v1.BuildStep;
import ai.chalk.compute.proto.sandbox.v1.DockerfileCommandsStep;
import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.proto.sandbox.v1.PipInstallStep;
import ai.chalk.compute.proto.sandbox.v1.RunCommandsStep;
import com.google.protobuf.ByteString;
import com.google.protobuf.CodedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * An {@link Image} as Chalk's wire message {@code chalk.sandbox.v1.ImageSpec}, and the content hash of that message:
 * the identity under which the server caches a build.
 */
final class ImageSpecs {

    private ImageSpecs() {}

    static ImageSpec of(Image image) {
        ImageSpec.Builder spec = ImageSpec.newBuilder()
                .setBaseImage(image.baseImage())
                .addAllEntrypoint(image.entrypoint())
                .addAllCmd(image.cmd())
                .putAllEnv(image.env());
        image.workdir().ifPresent(spec::setWorkdir);
        for (ImageStep step : image.steps()) {
            spec.addSteps(step(step));
        }
        return spec.build();
    }

    /**
     * The hex SHA-256 of the spec serialised deterministically: protobuf writes map entries in any order otherwise,
     * and equal images must have equal hashes in every JVM.
     */
    static String contentHash(ImageSpec spec) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(spec.getSerializedSize());
        try {
            CodedOutputStream out = CodedOutputStream.newInstance(bytes);
            out.useDeterministicSerialization();
            spec.writeTo(out);
            out.flush();
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes.toByteArray()));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every Java platform", e);
        }
    }

    private static BuildStep step(ImageStep step) {
        BuildStep.Builder b = BuildStep.newBuilder();
        if (step instanceof ImageStep.RunCommands s) {
            b.setRunCommands(RunCommandsStep.newBuilder().addAllCommands(s.commands()));
        } else if (step instanceof ImageStep.PipInstall s) {
            b.setPipInstall(PipInstallStep.newBuilder().addAllPackages(s.packages()));
        } else if (step instanceof ImageStep.AddFile s) {
            AddFileStep.Builder f = AddFileStep.newBuilder()
                    .setDestination(s.destination())
                    .setContent(ByteString.copyFrom(s.contentUnsafe()));
            s.mode().ifPresent(f::setMode);
            b.setAddFile(f);
        } else if (step instanceof ImageStep.DockerfileCommands s) {
            b.setDockerfileCommands(DockerfileCommandsStep.newBuilder().addAllCommands(s.commands()));
        } else {
            throw new IllegalStateException("unknown step " + step);
        }
        return b.build();
    }
}
