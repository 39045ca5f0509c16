package ai.chalk.compute.server.runtime.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.host.SandboxTools;
import ai.chalk.compute.server.runtime.local.mount.UnshareMounts;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The mount plans of local sandboxes as the tools receive them. */
class SandboxMountsTest {

    private static final Path ROOT = Path.of("/state/sandboxes/s1/root");
    private static final Path DEVICES = Path.of("/state/sandboxes/s1/dev");
    private static final Path PTYS = Path.of("/state/sandboxes/s1/pts");
    private static final SandboxMounts.Devices DEVS = new SandboxMounts.Devices(DEVICES, PTYS, 0);
    private static final SandboxFiles.SystemView VIEW = new SandboxFiles.SystemView(
            List.of("/usr", "/etc"), List.of(), List.of("/etc/shadow"), List.of("/etc/ssl/private"));
    private static final ProcMasks PROC = new ProcMasks(List.of("/proc/kcore"), List.of("/proc/acpi"));
    private static final List<SandboxSpec.VolumeBinding> VOLUMES = List.of(
            new SandboxSpec.VolumeBinding(Path.of("/vols/data"), "/data"),
            new SandboxSpec.VolumeBinding(Path.of("/code"), "/chalk/code", true));

    /** What every sandbox mounts after its root's own view: /proc, /dev and the directories it always has. */
    private static List<String> procDevAndDirs(String workdir) {
        List<String> a = new ArrayList<>(List.of(
                "--proc",
                "/proc",
                "--ro-bind",
                "/proc/sys",
                "/proc/sys",
                "--ro-bind-try",
                "/proc/sysrq-trigger",
                "/proc/sysrq-trigger",
                "--ro-bind-try",
                "/proc/irq",
                "/proc/irq",
                "--ro-bind-try",
                "/proc/bus",
                "/proc/bus",
                "--ro-bind-try",
                "/proc/fs",
                "/proc/fs",
                "--ro-bind-try",
                "/proc/dynamic_debug",
                "/proc/dynamic_debug",
                "--ro-bind",
                "/dev/null",
                "/proc/kcore",
                "--ro-bind",
                "/state/sandboxes/s1/empty-0555",
                "/proc/acpi",
                "--bind",
                "/state/sandboxes/s1/devdir",
                "/dev",
                "--dev-bind",
                PTYS.toString(),
                "/dev/pts",
                "--bind",
                "/state/sandboxes/s1/shm",
                "/dev/shm"));
        for (String n : List.of("null", "zero", "full", "random", "urandom", "tty")) {
            a.addAll(List.of("--dev-bind", DEVICES.resolve(n).toString(), "/dev/" + n));
        }
        a.addAll(List.of(
                "--perms",
                "1777",
                "--dir",
                "/tmp",
                "--perms",
                "1777",
                "--dir",
                "/var/tmp",
                "--perms",
                "0700",
                "--dir",
                "/root",
                "--dir",
                workdir));
        return a;
    }

    @Test
    void aSandboxOnTheHostsViewGetsItsVolumesFirstThenTheReadOnlySystemAndItsMasks() {
        List<String> expected = new ArrayList<>(List.of(
                "--unshare-pid",
                "--unshare-ipc",
                "--unshare-uts",
                "--unshare-cgroup",
                "--unshare-net",
                "--hostname",
                "h",
                "--die-with-parent",
                "--as-pid-1",
                "--cap-drop",
                "ALL",
                "--bind",
                ROOT.toString(),
                "/",
                "--bind",
                "/vols/data",
                "/data",
                "--ro-bind",
                "/code",
                "/chalk/code",
                "--ro-bind",
                "/usr",
                "/usr",
                "--ro-bind",
                "/etc",
                "/etc",
                "--ro-bind",
                "/dev/null",
                "/etc/shadow",
                "--ro-bind",
                "/state/sandboxes/s1/empty-0700",
                "/etc/ssl/private",
                "--ro-bind",
                "/state/resolv.conf",
                "/etc/resolv.conf"));
        expected.addAll(procDevAndDirs("/workspace"));
        expected.addAll(List.of(
                "--chdir",
                "/workspace",
                "--clearenv",
                "--setenv",
                "PATH",
                LocalRuntime.DEFAULT_PATH,
                "--json-status-fd",
                "1",
                "--seccomp",
                "3"));
        assertThat(SandboxCommands.bubblewrapArgs(
                        SandboxMounts.hostView(
                                ROOT,
                                VIEW,
                                VOLUMES,
                                Optional.of(Path.of("/state/resolv.conf")),
                                PROC,
                                DEVS,
                                "/workspace"),
                        "h",
                        "/workspace",
                        false))
                .containsExactlyElementsOf(expected);
    }

    @Test
    void anImageSandboxPinsItsEtcMasksThePreloadListAndSeesTheHelpersReadOnly() {
        List<String> expected = new ArrayList<>(List.of(
                "--bind",
                ROOT.toString(),
                "/",
                "--bind",
                "/vols/data",
                "/data",
                "--ro-bind",
                "/code",
                "/chalk/code",
                "--bind",
                ROOT.resolve("etc").toString(),
                "/etc",
                "--ro-bind",
                "/dev/null",
                "/etc/ld.so.preload",
                "--ro-bind",
                "/state/tools",
                SandboxTools.MOUNT));
        expected.addAll(procDevAndDirs("/app"));
        assertThat(ai.chalk.compute.server.runtime.local.mount.BubblewrapMounts.render(SandboxMounts.image(
                        ROOT, Path.of("/state/tools"), VOLUMES, Optional.empty(), PROC, DEVS, "/app")))
                .containsExactlyElementsOf(expected);
    }

    @Test
    void theUnshareInitGetsTheSameMountsAsEntries() {
        assertThat(UnshareMounts.render(SandboxMounts.image(
                        ROOT, Path.of("/state/tools"), VOLUMES, Optional.empty(), PROC, DEVS, "/app")))
                .startsWith(
                        "root:" + ROOT,
                        "vol:/data=/vols/data",
                        "rovol:/chalk/code=/code",
                        "self:/etc",
                        "maskfile:/etc/ld.so.preload",
                        "robind:" + SandboxTools.MOUNT + "=/state/tools",
                        "proc:/proc",
                        "procro:/proc/sys")
                .contains("node:1:3:/dev/null", "node:5:0:/dev/tty", "maskdir:0555:/proc/acpi")
                .endsWith("dir:1777:/tmp", "dir:1777:/var/tmp", "dir:0700:/root", "workdir:/app");
    }

    @Test
    void aProcEntryTheHostMasksStaysMaskedRatherThanReadOnly() {
        ProcMasks masks = new ProcMasks(List.of(), List.of("/proc/bus"));
        assertThat(UnshareMounts.render(
                        SandboxMounts.hostView(ROOT, VIEW, List.of(), Optional.empty(), masks, DEVS, "/")))
                .doesNotContain("procro:/proc/bus")
                .contains("maskdir:0555:/proc/bus");
    }

    @Test
    void volumesStayOffTheHelpersAndThePivotsOldRootEvenOnTheHostsView() {
        for (String at : List.of(SandboxTools.MOUNT + "/bin", "/.chalk-old-root", "/sys/kernel", "/etc/passwd")) {
            assertThatThrownBy(() -> SandboxMounts.hostView(
                            ROOT,
                            VIEW,
                            List.of(new SandboxSpec.VolumeBinding(Path.of("/v"), at)),
                            Optional.empty(),
                            PROC,
                            DEVS,
                            "/"))
                    .as(at)
                    .isInstanceOf(ComputeException.class)
                    .hasMessageContaining("runtime's own");
        }
    }
}
