package ai.chalk.compute.server.function;

import ai.chalk.compute.proto.blob.v1.BlobRef;
import ai.chalk.compute.proto.blob.v1.BlobServiceGrpc;
import ai.chalk.compute.proto.blob.v1.FindMissingBlobsRequest;
import ai.chalk.compute.proto.blob.v1.UploadBlobRequest;
import ai.chalk.compute.proto.blob.v1.UploadBlobResponse;
import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CallExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersionKey;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.FunctionConfig;
import ai.chalk.compute.proto.runtime.v1.CallFunctionRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingSpec;
import com.google.protobuf.ByteString;
import io.grpc.Channel;
import io.grpc.stub.StreamObserver;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

/**
 * A code snapshot of this test JVM's class path (the test classes, with {@link TestFunctionWorker}, and the gRPC and
 * protobuf jars it needs) as the protocol's blobs: a first entry holding {@code chalk-test-answer.txt} = a label, so
 * that two snapshots answer differently; directories as deterministic zips; a manifest.
 */
public final class TestCode {

    private static final Pattern NEEDED_JAR = Pattern.compile(
            "(grpc-|protobuf-|guava-|failureaccess|perfmark|gson|annotations|error_prone|j2objc|checker-qual"
                    + "|animal-sniffer|chalk-compute-proto|arrow-|flatbuffers-|netty-common|netty-buffer|jackson-"
                    + "|slf4j-api).*\\.jar");
    private static final Map<Path, byte[]> DIR_ZIPS = new java.util.concurrent.ConcurrentHashMap<>();

    /** Blob bytes by digest, in manifest order, and the manifest's digest. */
    final Map<String, byte[]> blobs = new LinkedHashMap<>();

    public final String manifestDigest;

    public TestCode(String label) throws IOException {
        this(label, true);
    }

    /** Deploys this code as {@code function}: its {@code echo} on the plain worker, at most one replica, none idle. */
    public CreateExternalFunctionVersionRequest echoDeployment(String function) {
        return CreateExternalFunctionVersionRequest.newBuilder()
                .setFunctionName(function)
                .setSpec(ScalingGroupSpec.newBuilder()
                        .setContainerSpec(ChalkContainerSpec.getDefaultInstance())
                        .setScalingSpec(
                                ScalingSpec.newBuilder().setMinReplicas(0).setMaxReplicas(1)))
                .setConfig(FunctionConfig.newBuilder()
                        .putOptions("chalk_compute.code", manifestDigest)
                        .putOptions("chalk_compute.functions", "echo=t.W#echo")
                        .putOptions("chalk_compute.worker", "plain"))
                .build();
    }

    /** Calls {@code echo} of {@code function} with {@code text}; what it answered. */
    public static String echo(
            ExternalFunctionCatalogServiceGrpc.ExternalFunctionCatalogServiceBlockingStub catalog,
            String function,
            String text) {
        return catalog.callExternalFunction(CallExternalFunctionRequest.newBuilder()
                        .setFunction(ExternalFunctionVersionKey.newBuilder().setFunctionName(function))
                        .setRemoteCallRequest(CallFunctionRequest.newBuilder()
                                .setName("echo")
                                .setFeatherStream(ByteString.copyFromUtf8(text)))
                        .build())
                .getRemoteCallResponse()
                .getFeatherStream()
                .toStringUtf8();
    }

    /** A snapshot with only the label entry when {@code withClassPath} is false: no worker class to run. */
    public TestCode(String label, boolean withClassPath) throws IOException {
        List<String> entries = new ArrayList<>();
        byte[] answer = zip(Map.of("chalk-test-answer.txt", label.getBytes(StandardCharsets.UTF_8)));
        entries.add(entry(0, "answer.zip", "dir", answer));
        int i = 1;
        for (String cp : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
            Path p = Path.of(cp);
            if (!withClassPath) {
                break;
            }
            if (Files.isDirectory(p)) {
                byte[] z = DIR_ZIPS.computeIfAbsent(p, TestCode::zipDir);
                entries.add(entry(i++, "classes" + i + ".zip", "dir", z));
            } else if (NEEDED_JAR.matcher(p.getFileName().toString()).matches()) {
                entries.add(entry(i++, p.getFileName().toString(), "jar", Files.readAllBytes(p)));
            }
        }
        byte[] manifest = ("{\"entries\":[" + String.join(",", entries) + "]}").getBytes(StandardCharsets.UTF_8);
        manifestDigest = digest(manifest);
        blobs.put(manifestDigest, manifest);
    }

    private String entry(int position, String name, String kind, byte[] bytes) {
        String d = digest(bytes);
        blobs.put(d, bytes);
        return "{\"name\":\"" + String.format("%03d-", position) + name + "\",\"kind\":\"" + kind + "\",\"digest\":\""
                + d + "\",\"size\":" + bytes.length + "}";
    }

    /** Uploads what the server reports missing; returns how many blobs were uploaded. */
    public int upload(Channel channel) throws Exception {
        return upload(channel, digest -> true);
    }

    /** The blobs of this code that the server reports missing. */
    public List<BlobRef> missing(Channel channel) {
        return missing(channel, digest -> true);
    }

    private List<BlobRef> missing(Channel channel, java.util.function.Predicate<String> which) {
        FindMissingBlobsRequest.Builder find = FindMissingBlobsRequest.newBuilder();
        blobs.forEach((d, b) -> {
            if (which.test(d)) {
                find.addBlobs(BlobRef.newBuilder().setDigest(d).setSize(b.length));
            }
        });
        return BlobServiceGrpc.newBlockingStub(channel)
                .findMissingBlobs(find.build())
                .getMissingList();
    }

    /** Uploads what the server reports missing of the blobs whose digests {@code which} accepts. */
    int upload(Channel channel, java.util.function.Predicate<String> which) throws Exception {
        List<BlobRef> missing = missing(channel, which);
        for (BlobRef ref : missing) {
            CompletableFuture<UploadBlobResponse> done = new CompletableFuture<>();
            StreamObserver<UploadBlobRequest> up = BlobServiceGrpc.newStub(channel)
                    .uploadBlob(new StreamObserver<>() {
                        @Override
                        public void onNext(UploadBlobResponse value) {
                            done.complete(value);
                        }

                        @Override
                        public void onError(Throwable t) {
                            done.completeExceptionally(t);
                        }

                        @Override
                        public void onCompleted() {}
                    });
            byte[] bytes = blobs.get(ref.getDigest());
            up.onNext(UploadBlobRequest.newBuilder().setBlob(ref).build());
            for (int off = 0; off < bytes.length; off += 1 << 20) {
                up.onNext(UploadBlobRequest.newBuilder()
                        .setData(ByteString.copyFrom(bytes, off, Math.min(1 << 20, bytes.length - off)))
                        .build());
            }
            up.onCompleted();
            done.get(60, TimeUnit.SECONDS);
        }
        return missing.size();
    }

    private static byte[] zipDir(Path dir) {
        try (Stream<Path> walk = Files.walk(dir)) {
            Map<String, byte[]> files = new java.util.TreeMap<>();
            for (Path p : (Iterable<Path>) walk::iterator) {
                if (Files.isRegularFile(p)) {
                    files.put(dir.relativize(p).toString(), Files.readAllBytes(p));
                }
            }
            return zip(files);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static byte[] zip(Map<String, byte[]> files) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (ZipOutputStream z = new ZipOutputStream(out)) {
            for (var e : new java.util.TreeMap<>(files).entrySet()) {
                ZipEntry ze = new ZipEntry(e.getKey());
                ze.setTime(315532800000L);
                z.putNextEntry(ze);
                z.write(e.getValue());
                z.closeEntry();
            }
        }
        return out.toByteArray();
    }

    static String digest(byte[] bytes) {
        try {
            return "sha256:"
                    + HexFormat.of()
                            .formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
