package ai.chalk.compute.server.runtime.local;

import static ai.chalk.compute.server.runtime.local.LocalTesting.command;
import static ai.chalk.compute.server.runtime.local.LocalTesting.run;
import static ai.chalk.compute.server.runtime.local.LocalTesting.sh;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.server.runtime.ProcessStartException;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import ai.chalk.compute.server.runtime.docker.DockerTesting;
import ai.chalk.compute.server.runtime.host.NoFollowDelete;
import ai.chalk.compute.server.runtime.local.image.LocalImage;
import ai.chalk.compute.server.runtime.local.image.OciFixtures;
import ai.chalk.compute.server.runtime.local.image.OverlayMount;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Local sandboxes whose root is an image's file system: exported from the Docker engine, or read from OCI layouts
 * the test writes, with bubblewrap; the helpers that enter them come from /.chalk, never from the image.
 */
class LocalImageSandboxTest {

    static final String BUSYBOX = "chalk-compute-test/busybox:latest";
    static final String DEBIAN = "chalk-compute-test/debian:bookworm";
    static final String NO_SHELL = "chalk-compute-test/no-shell:latest";

    @TempDir
    Path temp;

    Path state;
    LocalRuntime runtime;

    @BeforeAll
    static void images() throws Exception {
        // built the way CI builds them when missing (the docker runtime's tests use them too)
        DockerTesting.debianImage();
        LocalTesting.runOrFail(
                "sh",
                "-c",
                "docker image inspect " + NO_SHELL + " > /dev/null 2>&1" + " || tar -c -T /dev/null | docker import - "
                        + NO_SHELL);
    }

    @BeforeEach
    void start() throws Exception {
        state = Files.createDirectories(temp.resolve("state"));
        runtime = new LocalRuntime(state, LocalIsolation.AUTO);
    }

    @AfterEach
    void stop() throws Exception {
        if (runtime != null) {
            runtime.close();
        }
        NoFollowDelete.delete(state); // the image trees hold links to host paths; never follow them
    }

    static SandboxSpec imageSpec(String image) {
        return imageSpec(image, List.of(), Optional.empty());
    }

    static SandboxSpec imageSpec(String image, List<SandboxSpec.VolumeBinding> volumes, Optional<Path> seed) {
        return new SandboxSpec(
                LocalTesting.newId(),
                image,
                Map.of("FROM_SPEC", "yes"),
                "/workspace",
                ResourceLimits.NONE,
                false,
                List.of(),
                volumes,
                seed);
    }

    @Test
    void debianImageIsTheWholeRootAndTheHostIsNotVisible() throws Exception {
        RuntimeSandbox sb = runtime.start(imageSpec(DEBIAN));
        assertThat(run(sb, command("cat", "/etc/debian_version")).ok().out()).startsWith("12.");
        // only the host has bubblewrap and this worktree; the image's /usr is its own
        assertThat(Files.exists(Path.of("/usr/bin/bwrap"))).isTrue();
        assertThat(sh(sb, "test -e /usr/bin/bwrap || test -e /work || echo absent")
                        .ok()
                        .out())
                .isEqualTo("absent\n");
        assertThat(sh(sb, "echo $FROM_SPEC $PATH; pwd").ok().out())
                .isEqualTo("yes /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n/workspace\n");
        assertThat(sh(sb, "grep -E '^Cap(Prm|Eff|Bnd|Amb)' /proc/self/status")
                        .ok()
                        .out())
                .isEqualTo("CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n"
                        + "CapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\n");
        Path root = state.resolve("sandboxes").resolve(sb.id()).resolve("root");
        assertThat(OverlayMount.mounted(root)).isTrue();
        sb.terminate(Duration.ofSeconds(1));
        assertThat(OverlayMount.mounted(root)).isFalse();
        assertThat(state.resolve("sandboxes").resolve(sb.id())).doesNotExist();
    }

    @Test
    void theSandboxCannotChangeWhatPrivilegedHelpersLoad() throws Exception {
        RuntimeSandbox sb = runtime.start(imageSpec(DEBIAN));
        // the loader of setpriv (still holding capabilities) reads /etc/ld.so.preload from the sandbox's root:
        // it is masked, and /etc (a mount point) cannot be swapped for another
        var r = sh(
                sb,
                "echo /tmp/evil.so > /etc/ld.so.preload; mv /etc /etc.old; mkdir -p /x/etc;"
                        + " mv /x/etc /etc; echo x > /.chalk/bin/setpriv; mv /.chalk /chalk.old; echo done");
        assertThat(r.out()).isEqualTo("done\n");
        assertThat(r.err())
                .contains("/etc/ld.so.preload")
                .contains("Device or resource busy")
                .contains("Read-only file system");
        assertThat(sh(sb, "cat /etc/ld.so.preload | wc -c; test -d /.chalk/bin && echo helpers")
                        .ok()
                        .out())
                .isEqualTo("0\nhelpers\n");
        // and execs still work (through the loader, the spare helpers too)
        for (int i = 0; i < 4; i++) {
            assertThat(run(sb, command("echo", "again")).ok().out()).isEqualTo("again\n");
        }
    }

    @Test
    void busyboxImageRunsExecsThroughTheSpareHelpers() throws Exception {
        RuntimeSandbox sb = runtime.start(imageSpec(BUSYBOX));
        for (int i = 0; i < 8; i++) {
            if (i == 3) {
                Thread.sleep(500); // the second exec started spares; give them time to be ready
            }
            assertThat(sh(sb, "echo $FROM_SPEC; readlink /proc/self/exe").ok().out())
                    .isEqualTo("yes\n/bin/busybox\n");
        }
        // the spare helpers are the host's perl from /.chalk; the image has none, and the host's is not on its PATH
        assertThatThrownBy(() -> sb.exec(command("perl", "-e", "1")))
                .isInstanceOf(ProcessStartException.class)
                .hasMessageContaining("command not found in sandbox: perl");
    }

    @Test
    void anImageWithoutAShellStartsAndRefusesMissingCommandsClearly(@TempDir Path tools) throws Exception {
        Files.copy(Path.of("/bin/busybox"), tools.resolve("busybox"));
        RuntimeSandbox sb = runtime.start(
                imageSpec(NO_SHELL, List.of(new SandboxSpec.VolumeBinding(tools, "/opt/tools")), Optional.empty()));
        assertThatThrownBy(() -> sb.exec(sh("true")))
                .isInstanceOf(ProcessStartException.class)
                .hasMessageContaining("command not found in sandbox: /bin/sh");
        assertThat(run(sb, command("/opt/tools/busybox", "echo", "static")).ok().out())
                .isEqualTo("static\n");
        assertThat(run(sb, command("/opt/tools/busybox", "ls", "/")).ok().out()).doesNotContain("usr");
    }

    @Test
    void ociLayoutWithWhiteoutsOpaqueDirectoryEnvAndWorkingDir() throws Exception {
        writeOciImage(state.resolve("oci").resolve("tools"), "v1");
        RuntimeSandbox sb = runtime.start(imageSpec("oci:tools:v1"));
        assertThat(sh(sb, "pwd; echo $GREETING $FROM_SPEC; ls /opaque; ls / | grep -c gone; cat /keep/file")
                        .ok()
                        .out())
                .isEqualTo("/app\nhello yes\nnew\n0\nkept\n");
        // an archive of the same layout is the same image, unpacked once
        OciFixtures.writeArchive(
                state.resolve("oci").resolve("tools"), state.resolve("oci").resolve("tools.tar"));
        RuntimeSandbox fromArchive = runtime.start(imageSpec("oci-archive:tools.tar:v1"));
        assertThat(sh(fromArchive, "cat /app/hello.txt").ok().out()).isEqualTo("hi\n");
        try (var s = Files.list(state.resolve("images/rootfs"))) {
            assertThat(s.count()).isEqualTo(1);
        }
    }

    @Test
    void badImageReferencesAreClearStartErrors() throws Exception {
        writeOciImage(state.resolve("oci").resolve("tools"), "v1");
        assertThatThrownBy(() -> runtime.start(imageSpec("oci:../../etc")))
                .isInstanceOf(RuntimeStartException.class)
                .hasMessageContaining("inside the server's OCI import");
        assertThatThrownBy(() -> runtime.start(imageSpec("oci:tools:v2")))
                .isInstanceOf(RuntimeStartException.class)
                .hasMessageContaining("none is tagged v2");
        assertThatThrownBy(() -> runtime.start(imageSpec("oci:missing")))
                .isInstanceOf(RuntimeStartException.class)
                .hasMessageContaining("there is no directory missing");
        assertThatThrownBy(() -> runtime.start(imageSpec("chalk-compute-test/nothing:here")))
                .isInstanceOf(RuntimeStartException.class)
                .hasMessageContaining("is not in the Docker engine")
                .hasMessageContaining("pulling it failed");
        try (var s = Files.list(state.resolve("sandboxes"))) {
            assertThat(s.count()).isZero();
        }
    }

    @Test
    void aLinkPlantedByOneLayerCannotMakeTheNextWriteOnTheHost() throws Exception {
        Path victim = Files.createDirectories(temp.resolve("victim"));
        byte[] l1 = new OciFixtures.Layer()
                .symlink("evil", victim.toString())
                .file("bin/busybox", Files.readAllBytes(Path.of("/bin/busybox")), 0755)
                .symlink("bin/sh", "busybox")
                .bytes();
        byte[] l2 = new OciFixtures.Layer().file("evil/owned", "pwned", 0644).bytes();
        OciFixtures.writeLayout(state.resolve("oci/evil"), List.of(l1, l2), true, "{}", "latest");
        RuntimeSandbox sb = runtime.start(imageSpec("oci:evil"));
        assertThat(victim).isEmptyDirectory();
        assertThat(sh(sb, "cat /evil/owned; test -L /evil || echo real-dir")
                        .ok()
                        .out())
                .isEqualTo("pwnedreal-dir\n");
    }

    @Test
    void theImageCacheIsSharedByConcurrentStartsAndKeptAcrossRestarts() throws Exception {
        writeOciImage(state.resolve("oci").resolve("tools"), "v1");
        ExecutorService pool = Executors.newFixedThreadPool(3);
        List<Future<LocalImage>> resolves = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            resolves.add(pool.submit(() -> runtime.image("oci:tools:v1")));
        }
        List<Path> layers = new ArrayList<>();
        for (Future<LocalImage> f : resolves) {
            layers.add(f.get().layers().get(0));
        }
        pool.shutdown();
        assertThat(layers).containsOnly(layers.get(0));
        try (var tmp = Files.list(state.resolve("images/tmp"))) {
            assertThat(tmp.count()).isZero();
        }
        Object inode = Files.getAttribute(layers.get(0), "unix:ino");
        runtime.close();
        runtime = new LocalRuntime(state, LocalIsolation.AUTO);
        RuntimeSandbox sb = runtime.start(imageSpec("oci:tools:v1"));
        assertThat(sh(sb, "cat /app/hello.txt").ok().out()).isEqualTo("hi\n");
        assertThat(Files.getAttribute(layers.get(0), "unix:ino")).isEqualTo(inode);
    }

    @Test
    void snapshotsKeepWhatChangedAndRestoreOntoTheSameImage() throws Exception {
        RuntimeSandbox sb = runtime.start(imageSpec(DEBIAN));
        sh(
                        sb,
                        "echo mine > /workspace/note; rm /etc/debian_version; mkdir -p /opt/new;"
                                + " rm -r /etc/apt; mkdir /etc/apt; touch /etc/apt/only")
                .ok();
        Path snapshot = temp.resolve("snapshot");
        sb.snapshot(snapshot);
        sb.terminate(Duration.ZERO);
        assertThat(snapshot.resolve("etc/debian_version")).exists(); // the whiteout, a 0/0 device
        assertThat(snapshot.resolve("usr")).doesNotExist(); // only what changed
        RuntimeSandbox restored = runtime.start(imageSpec(DEBIAN, List.of(), Optional.of(snapshot)));
        assertThat(sh(
                                restored,
                                "cat /workspace/note; test -e /etc/debian_version || echo deleted;"
                                        + " test -d /opt/new && grep -q bookworm /etc/os-release && echo same-image; ls /etc/apt")
                        .ok()
                        .out())
                .isEqualTo("mine\ndeleted\nsame-image\nonly\n");
    }

    @Test
    void overlayRootsLeftByACrashAreUnmountedAndRemovedByReconcile() throws Exception {
        LocalImage image = runtime.image(BUSYBOX);
        runtime.close();
        runtime = null;
        // what a killed server leaves: a sandbox directory with its root still mounted
        Path left = Files.createDirectories(state.resolve("sandboxes/left-1"));
        Files.createDirectories(left.resolve("upper"));
        Files.createDirectories(left.resolve("work"));
        Files.createDirectories(left.resolve("root"));
        OverlayMount.mount(
                state.toRealPath(),
                image.layers(),
                left.resolve("upper").toRealPath(),
                left.resolve("work").toRealPath(),
                left.resolve("root").toRealPath(),
                true);
        assertThat(OverlayMount.mounted(left.resolve("root").toRealPath())).isTrue();
        Path real = left.toRealPath();
        runtime = new LocalRuntime(state, LocalIsolation.AUTO);
        runtime.reconcile(List.of());
        assertThat(OverlayMount.mountsUnder(real)).isEmpty();
        assertThat(real).doesNotExist();
        assertThat(image.layers().get(0).resolve("bin/busybox")).exists();
    }

    @Test
    void plainProcessesRefuseImages() throws Exception {
        runtime.close();
        runtime = null;
        try (LocalRuntime none = new LocalRuntime(state, LocalIsolation.NONE)) {
            assertThatThrownBy(() -> none.start(imageSpec(BUSYBOX)))
                    .isInstanceOf(RuntimeStartException.class)
                    .hasMessageContaining("isolation none");
        }
    }

    @Test
    void theUnshareLevelRunsImagesAsSafely() throws Exception {
        runtime.close();
        runtime = new LocalRuntime(state, LocalIsolation.AUTO, LocalTesting.pathWithout(temp.resolve("path"), "bwrap"));
        assertThat(runtime.isolation().level()).isEqualTo("unshare");
        RuntimeSandbox sb = runtime.start(imageSpec(DEBIAN));
        assertThat(run(sb, command("cat", "/etc/debian_version")).ok().out()).startsWith("12.");
        var r = sh(
                sb,
                "echo /tmp/evil.so > /etc/ld.so.preload; mv /etc /etc.old; echo x > /.chalk/bin/setpriv;"
                        + " test -e /usr/bin/bwrap || echo no-host-usr; grep -E '^Cap(Eff|Bnd)' /proc/self/status;"
                        + " wc -c < /etc/ld.so.preload");
        // (here the mask is /dev/null itself, so the write above vanished into it)
        assertThat(r.out()).isEqualTo("no-host-usr\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\n0\n");
        assertThat(r.err()).contains("Device or resource busy").contains("Read-only file system");
        for (int i = 0; i < 4; i++) {
            assertThat(run(sb, command("echo", "again")).ok().out()).isEqualTo("again\n");
        }
        Path root = state.resolve("sandboxes").resolve(sb.id()).resolve("root").toRealPath();
        sb.terminate(Duration.ZERO);
        assertThat(OverlayMount.mounted(root)).isFalse();
        // builds need bubblewrap
        assertThatThrownBy(() -> runtime.imageBuilder()
                        .check(ai.chalk.compute.proto.sandbox.v1.ImageSpec.newBuilder()
                                .setBaseImage(BUSYBOX)
                                .build()))
                .isInstanceOfSatisfying(
                        ai.chalk.compute.server.error.ComputeException.class,
                        e -> assertThat(e.kind())
                                .isEqualTo(ai.chalk.compute.server.error.ComputeException.Kind.REFUSED));
    }

    @Test
    void imagesThatRunAsAnotherUserAreRefused() throws Exception {
        byte[] l1 = new OciFixtures.Layer().file("bin/true", "x", 0755).bytes();
        OciFixtures.writeLayout(state.resolve("oci/user"), List.of(l1), false, "{\"User\":\"nobody\"}", "latest");
        assertThatThrownBy(() -> runtime.start(imageSpec("oci:user")))
                .isInstanceOf(RuntimeStartException.class)
                .hasMessageContaining("runs as user \"nobody\"");
    }

    /**
     * An image of two gzip layers: the first with busybox as /bin/sh and some directories, the second deleting
     * one ({@code .wh.gone}) and replacing another's content ({@code .wh..wh..opq}); WorkingDir and Env set.
     */
    static void writeOciImage(Path dir, String tag) throws Exception {
        byte[] l1 = new OciFixtures.Layer()
                .dir("bin")
                .file("bin/busybox", Files.readAllBytes(Path.of("/bin/busybox")), 0755)
                .symlink("bin/sh", "busybox")
                .symlink("bin/ls", "busybox")
                .symlink("bin/cat", "busybox")
                .symlink("bin/grep", "busybox")
                .symlink("bin/pwd", "busybox")
                .dir("gone")
                .file("gone/a", "a", 0644)
                .dir("opaque")
                .file("opaque/old", "old", 0644)
                .dir("keep")
                .file("keep/file", "kept\n", 0644)
                .bytes();
        byte[] l2 = new OciFixtures.Layer()
                .file(".wh.gone", "", 0)
                .dir("opaque")
                .file("opaque/.wh..wh..opq", "", 0)
                .file("opaque/new", "new", 0644)
                .dir("app")
                .file("app/hello.txt", "hi\n", 0644)
                .bytes();
        OciFixtures.writeLayout(
                dir,
                List.of(l1, l2),
                true,
                "{\"Env\":[\"PATH=/bin\",\"GREETING=hello\"],\"WorkingDir\":\"/app\"}",
                tag);
    }
}
