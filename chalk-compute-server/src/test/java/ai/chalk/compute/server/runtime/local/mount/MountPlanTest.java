package ai.chalk.compute.server.runtime.local.mount;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.server.error.ComputeException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class MountPlanTest {

    private static final Path LAYER = Path.of("/state/sandboxes/s1/root");

    /** A small plan with one operation of every kind, in an order the check accepts. */
    private static MountPlan.Builder everyKind() {
        return MountPlan.builder(LAYER)
                .add(new MountOp.Volume(Path.of("/vols/data"), "/data", false))
                .add(new MountOp.Volume(Path.of("/vols/code"), "/code", true))
                .add(new MountOp.SystemDir("/usr"))
                .add(new MountOp.SelfBind("/etc"))
                .add(new MountOp.MaskFile("/etc/shadow"))
                .add(new MountOp.MaskDir("/etc/ssl/private", 0700, Path.of("/state/sandboxes/s1/empty-0700")))
                .add(new MountOp.ReadOnlyBind(Path.of("/state/resolv.conf"), "/etc/resolv.conf"))
                .add(new MountOp.Proc("/proc"))
                .add(new MountOp.ProcReadOnly("/proc/sys", false))
                .add(new MountOp.ProcReadOnly("/proc/irq", true))
                .add(new MountOp.MaskDir("/proc/acpi", 0555, Path.of("/state/sandboxes/s1/empty-0555")))
                .add(new MountOp.Dev(
                        "/dev",
                        Path.of("/state/sandboxes/s1/devdir"),
                        Path.of("/state/sandboxes/s1/pts"),
                        Path.of("/state/sandboxes/s1/shm"),
                        0))
                .add(new MountOp.DeviceNode("/dev/null", Path.of("/state/sandboxes/s1/dev/null"), 1, 3))
                .add(new MountOp.Dir("/tmp", 01777))
                .add(new MountOp.WorkDir("/workspace"));
    }

    @Test
    void bubblewrapGetsOneOptionGroupPerOperationInThePlansOrder() {
        assertThat(BubblewrapMounts.render(everyKind().build()))
                .containsExactly(
                        "--bind",
                        "/state/sandboxes/s1/root",
                        "/",
                        "--bind",
                        "/vols/data",
                        "/data",
                        "--ro-bind",
                        "/vols/code",
                        "/code",
                        "--ro-bind",
                        "/usr",
                        "/usr",
                        "--bind",
                        "/state/sandboxes/s1/root/etc",
                        "/etc",
                        "--ro-bind",
                        "/dev/null",
                        "/etc/shadow",
                        "--ro-bind",
                        "/state/sandboxes/s1/empty-0700",
                        "/etc/ssl/private",
                        "--ro-bind",
                        "/state/resolv.conf",
                        "/etc/resolv.conf",
                        "--proc",
                        "/proc",
                        "--ro-bind",
                        "/proc/sys",
                        "/proc/sys",
                        "--ro-bind-try",
                        "/proc/irq",
                        "/proc/irq",
                        "--ro-bind",
                        "/state/sandboxes/s1/empty-0555",
                        "/proc/acpi",
                        "--bind",
                        "/state/sandboxes/s1/devdir",
                        "/dev",
                        "--dev-bind",
                        "/state/sandboxes/s1/pts",
                        "/dev/pts",
                        "--bind",
                        "/state/sandboxes/s1/shm",
                        "/dev/shm",
                        "--dev-bind",
                        "/state/sandboxes/s1/dev/null",
                        "/dev/null",
                        "--perms",
                        "1777",
                        "--dir",
                        "/tmp",
                        "--dir",
                        "/workspace");
    }

    @Test
    void theUnshareInitGetsOneEntryPerOperationInThePlansOrder() {
        assertThat(UnshareMounts.render(everyKind().build()))
                .containsExactly(
                        "root:/state/sandboxes/s1/root",
                        "vol:/data=/vols/data",
                        "rovol:/code=/vols/code",
                        "ro:/usr",
                        "self:/etc",
                        "maskfile:/etc/shadow",
                        "maskdir:0700:/etc/ssl/private",
                        "robind:/etc/resolv.conf=/state/resolv.conf",
                        "proc:/proc",
                        "procro:/proc/sys",
                        "procro:/proc/irq",
                        "maskdir:0555:/proc/acpi",
                        "dev:64:0:/dev",
                        "node:1:3:/dev/null",
                        "dir:1777:/tmp",
                        "workdir:/workspace");
    }

    @Test
    void theUnshareScriptReadsEveryKindOfEntryItIsGiven() {
        for (String entry : UnshareMounts.render(everyKind().build())) {
            String kind = entry.substring(0, entry.indexOf(':') + 1);
            assertThat(UnshareMounts.SCRIPT).as(kind).contains("\n    " + kind + "*)");
        }
    }

    @Test
    void aWorkdirAtTheRootIsNoBubblewrapOption() {
        MountPlan plan = MountPlan.builder(LAYER).add(new MountOp.WorkDir("/")).build();
        assertThat(BubblewrapMounts.render(plan)).containsExactly("--bind", LAYER.toString(), "/");
        assertThat(UnshareMounts.render(plan)).containsExactly("root:" + LAYER, "workdir:/");
    }

    @Test
    void aVolumeCannotBeAtInsideOrAboveAPathTheRuntimeMounts() {
        for (String at : List.of("/usr", "/usr/bin", "/etc/shadow", "/etc", "/proc/sys", "/dev", "/")) {
            MountPlan.Builder plan = everyKind().add(new MountOp.Volume(Path.of("/v"), at, false));
            assertThatThrownBy(plan::build)
                    .as(at)
                    .isInstanceOf(ComputeException.class)
                    .satisfies(e -> assertThat(((ComputeException) e).kind()).isEqualTo(ComputeException.Kind.INVALID));
        }
        assertThatThrownBy(everyKind().add(new MountOp.Volume(Path.of("/v"), "/usr/lib", false))::build)
                .hasMessage("cannot mount a volume at /usr/lib: /usr is the sandbox runtime's own; mount volumes"
                        + " elsewhere, e.g. /data");
    }

    @Test
    void aVolumeCannotCoverAReservedPathNothingIsMountedOn() {
        MountPlan.Builder plan =
                MountPlan.builder(LAYER).reserve("/sys").add(new MountOp.Volume(Path.of("/v"), "/sys/fs", false));
        assertThatThrownBy(plan::build).hasMessageContaining("/sys is the sandbox runtime's own");
    }

    @Test
    void aVolumeMayGoWhereTheRuntimeOnlyMakesADirectory() {
        MountPlan plan = MountPlan.builder(LAYER)
                .add(new MountOp.Volume(Path.of("/v"), "/tmp/cache", false))
                .add(new MountOp.Dir("/tmp", 01777))
                .add(new MountOp.WorkDir("/tmp/cache/work"))
                .build();
        assertThat(plan.ops()).hasSize(4);
    }

    @Test
    void aVolumePathMustBeAbsoluteAndBelowTheRoot() {
        for (String at : List.of("data", "", "/", "/data/..", "/a\0b")) {
            assertThatThrownBy(MountPlan.builder(LAYER).add(new MountOp.Volume(Path.of("/v"), at, false))::build)
                    .as(at)
                    .isInstanceOf(ComputeException.class)
                    .hasMessageContaining("absolute path below /");
        }
        assertThatThrownBy(MountPlan.builder(LAYER).add(new MountOp.Volume(Path.of("/v"), "/a=b", false))::build)
                .isInstanceOf(ComputeException.class)
                .hasMessageContaining("'='");
    }

    @Test
    void aVolumePathIsMountedNormalized() {
        MountPlan plan = MountPlan.builder(LAYER)
                .add(new MountOp.Volume(Path.of("/v"), "/data//x/../y/", true))
                .build();
        assertThat(plan.ops().get(1)).isEqualTo(new MountOp.Volume(Path.of("/v"), "/data/y", true));
        // and checked as such: a path that climbs into a runtime path is refused
        assertThatThrownBy(everyKind().add(new MountOp.Volume(Path.of("/v"), "/data/../proc", false))::build)
                .hasMessageContaining("/proc is the sandbox runtime's own");
    }

    @Test
    void volumesCannotOverlapEachOther() {
        assertThatThrownBy(MountPlan.builder(LAYER)
                        .add(new MountOp.Volume(Path.of("/a"), "/data", false))
                        .add(new MountOp.Volume(Path.of("/b"), "/data/", false))::build)
                .isInstanceOf(ComputeException.class)
                .hasMessageContaining("two volumes are mounted at /data");
        for (List<String> pair : List.of(List.of("/data", "/data/cache"), List.of("/data/cache", "/data"))) {
            assertThatThrownBy(MountPlan.builder(LAYER)
                            .add(new MountOp.Volume(Path.of("/a"), pair.get(0), false))
                            .add(new MountOp.Volume(Path.of("/b"), pair.get(1), false))::build)
                    .as(pair.toString())
                    .isInstanceOf(ComputeException.class)
                    .hasMessageContaining("overlap");
        }
        // a shared prefix is no overlap
        assertThat(MountPlan.builder(LAYER)
                        .add(new MountOp.Volume(Path.of("/a"), "/data", false))
                        .add(new MountOp.Volume(Path.of("/b"), "/data2", false))
                        .build()
                        .ops())
                .hasSize(3);
    }

    @Test
    void theRuntimesOwnMountsMustComeParentFirst() {
        MountPlan.Builder childFirst = MountPlan.builder(LAYER)
                .add(new MountOp.ProcReadOnly("/proc/sys", false))
                .add(new MountOp.Proc("/proc"));
        assertThatThrownBy(childFirst::build)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("would hide");
        MountPlan.Builder twice = MountPlan.builder(LAYER)
                .add(new MountOp.Dev(
                        "/dev",
                        Path.of("/state/sandboxes/s1/devdir"),
                        Path.of("/state/sandboxes/s1/pts"),
                        Path.of("/state/sandboxes/s1/shm"),
                        0))
                .add(new MountOp.Dev(
                        "/dev",
                        Path.of("/state/sandboxes/s1/devdir"),
                        Path.of("/state/sandboxes/s1/pts"),
                        Path.of("/state/sandboxes/s1/shm"),
                        0));
        assertThatThrownBy(twice::build).isInstanceOf(IllegalStateException.class);
        MountPlan.Builder secondRoot = MountPlan.builder(LAYER).add(new MountOp.Root(LAYER));
        assertThatThrownBy(secondRoot::build)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("one root");
    }

    @Test
    void aDirectoryMadeBeforeAMountAboveItIsOutOfOrder() {
        MountPlan.Builder plan =
                MountPlan.builder(LAYER).add(new MountOp.Dir("/proc/x", 0755)).add(new MountOp.Proc("/proc"));
        assertThatThrownBy(plan::build).isInstanceOf(IllegalStateException.class);
    }
}
