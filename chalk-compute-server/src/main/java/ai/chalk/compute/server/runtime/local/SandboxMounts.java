package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.host.SandboxDevices;
import ai.chalk.compute.server.runtime.host.SandboxTools;
import ai.chalk.compute.server.runtime.local.mount.MountOp;
import ai.chalk.compute.server.runtime.local.mount.MountPlan;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The mount plan of a local sandbox, the same whichever tool sets it up: its root; the caller's volumes right after
 * it and before everything the runtime mounts itself, so that nothing a caller binds can cover a runtime path even
 * if a check missed it; the host's system view or an image's {@code /etc} and helpers; the resolver; a fresh
 * {@code /proc} with what describes the host masked; {@code /dev} with the sandbox's own nodes; the directories
 * every sandbox has; its working directory.
 */
final class SandboxMounts {

    /**
     * Kept from volumes though not (always) mounted: the kernel's {@code /sys}, the helpers' mount point (in a
     * sandbox on the host's view too, so its processes cannot put files where an image sandbox's helpers are), and
     * the old root the unshare init pivots away from.
     */
    private static final List<String> RESERVED =
            List.of("/proc", "/dev", "/sys", SandboxTools.MOUNT, "/.chalk-old-root");

    /**
     * Entries of /proc that stay visible but read-only (Docker's {@code readonlyPaths}, as far as kept here; and
     * {@code /proc/fs} and {@code /proc/dynamic_debug}, whose root-writable files check no capability: where a sandbox
     * has no user namespace of its own, its root, host root without capabilities, could write them, e.g. switch every
     * {@code pr_debug} of the kernel on).
     */
    private static final List<String> PROC_READ_ONLY =
            List.of("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs", "/proc/dynamic_debug");

    private SandboxMounts() {}

    /**
     * Where a sandbox's {@code /dev} comes from on the host, and who owns it.
     *
     * @param nodes the directory of its own device nodes ({@link SandboxDevices#create})
     * @param ptys where its terminals' {@code devpts} is mounted; its {@code /dev}, {@code shm} and empty directories
     *     are beside it
     * @param owner 0, or {@link SandboxDevices#OVERFLOW_ID} where the sandbox's root is the host's root
     */
    record Devices(Path nodes, Path ptys, int owner) {}

    /**
     * A sandbox on the host's system view: its directories read-only at their own paths, with the masks over what
     * the host keeps from other users.
     */
    static MountPlan hostView(
            Path root,
            SandboxFiles.SystemView view,
            List<SandboxSpec.VolumeBinding> volumes,
            Optional<Path> resolvConf,
            ProcMasks procMasks,
            Devices devices,
            String workdir) {
        MountPlan.Builder plan = withVolumes(root, volumes);
        view.readOnlyDirs().forEach(d -> plan.add(new MountOp.SystemDir(d)));
        view.maskedFiles().forEach(f -> plan.add(new MountOp.MaskFile(f)));
        view.maskedDirs()
                .forEach(d ->
                        plan.add(new MountOp.MaskDir(d, EmptyDirs.CLOSED, empty(devices.ptys(), EmptyDirs.CLOSED))));
        return finish(plan, resolvConf, procMasks, devices, workdir);
    }

    /**
     * A sandbox on an image's root ({@link ImageRoot}): the helpers at {@value SandboxTools#MOUNT} read-only,
     * {@code /etc} bound onto itself and {@value ImageRoot#PRELOAD} masked: a mount point can be neither renamed nor
     * replaced, so the loader of a privileged helper finds no preload list the sandbox wrote.
     */
    static MountPlan image(
            Path root,
            Path tools,
            List<SandboxSpec.VolumeBinding> volumes,
            Optional<Path> resolvConf,
            ProcMasks procMasks,
            Devices devices,
            String workdir) {
        MountPlan.Builder plan = withVolumes(root, volumes)
                .add(new MountOp.SelfBind("/etc"))
                .add(new MountOp.MaskFile(ImageRoot.PRELOAD))
                .add(new MountOp.ReadOnlyBind(tools, SandboxTools.MOUNT));
        return finish(plan, resolvConf, procMasks, devices, workdir);
    }

    /** The empty directory of {@code mode} in the sandbox's state directory, where its terminals are mounted. */
    private static Path empty(Path ptys, int mode) {
        return EmptyDirs.in(ptys.getParent(), mode);
    }

    private static MountPlan.Builder withVolumes(Path root, List<SandboxSpec.VolumeBinding> volumes) {
        MountPlan.Builder plan = MountPlan.builder(root);
        RESERVED.forEach(plan::reserve);
        volumes.forEach(v -> plan.add(new MountOp.Volume(v.source(), v.mountPath(), v.readOnly())));
        return plan;
    }

    /**
     * A fresh {@code /proc}, with {@code /proc/sys} and its kin read-only and the host's details masked
     * ({@link ProcMasks}), directories with {@code readableEmpty} (an empty directory of mode {@link EmptyDirs#READABLE}
     * no one writes to): a sandbox's, and an image build step's.
     */
    static List<MountOp> proc(ProcMasks procMasks, Path readableEmpty) {
        List<MountOp> ops = new ArrayList<>();
        ops.add(new MountOp.Proc("/proc"));
        PROC_READ_ONLY.stream()
                .filter(p -> !procMasks.files().contains(p) && !procMasks.dirs().contains(p))
                .forEach(p -> ops.add(new MountOp.ProcReadOnly(p, !p.equals("/proc/sys")))); // a mask hides more
        procMasks.files().forEach(f -> ops.add(new MountOp.MaskFile(f)));
        procMasks.dirs().forEach(d -> ops.add(new MountOp.MaskDir(d, EmptyDirs.READABLE, readableEmpty)));
        return ops;
    }

    /**
     * The resolver (slirp4netns', with network), then {@code /proc} ({@link #proc}); then {@code /dev}, whose nodes are
     * the sandbox's own ({@link SandboxDevices}, made in {@code devices.nodes()} and owned by {@code devices.owner()},
     * and its terminals' {@code devpts} mounted at {@code devices.ptys()}); then the shared temporary directories and
     * root's home.
     */
    private static MountPlan finish(
            MountPlan.Builder plan, Optional<Path> resolvConf, ProcMasks procMasks, Devices devices, String workdir) {
        resolvConf.ifPresent(f -> plan.add(new MountOp.ReadOnlyBind(f, SandboxCommands.RESOLV_CONF)));
        proc(procMasks, empty(devices.ptys(), EmptyDirs.READABLE)).forEach(plan::add);
        Path ptys = devices.ptys();
        plan.add(new MountOp.Dev(
                "/dev",
                ptys.resolveSibling(SandboxDevices.DEV),
                ptys,
                ptys.resolveSibling(SandboxDevices.SHM),
                devices.owner()));
        for (SandboxDevices.Node n : SandboxDevices.NODES) {
            plan.add(new MountOp.DeviceNode(
                    "/dev/" + n.name(), devices.nodes().resolve(n.name()), n.major(), n.minor()));
        }
        return plan.add(new MountOp.Dir("/tmp", 01777))
                .add(new MountOp.Dir("/var/tmp", 01777))
                .add(new MountOp.Dir("/root", 0700))
                .add(new MountOp.WorkDir(workdir))
                .build();
    }
}
