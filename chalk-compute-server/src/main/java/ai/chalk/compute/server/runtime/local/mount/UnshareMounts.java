package ai.chalk.compute.server.runtime.local.mount;

import ai.chalk.compute.server.runtime.host.SandboxDevices;
import java.util.ArrayList;
import java.util.List;

/**
 * A {@link MountPlan} for the {@code unshare} init, which has no mount options of its own: one argument per
 * operation, {@code KIND:FIELDS}, read by {@link #SCRIPT} inside the sandbox's new mount namespace, still as the
 * host's root. The two are kept side by side so the format is read and written in one place.
 *
 * <p>Fields: a target alone; {@code TARGET=SOURCE} for binds (targets never contain '=', host paths may);
 * {@code MODE:TARGET}, {@code PTYS:OWNER:TARGET} and {@code MAJOR:MINOR:TARGET} (numbers never contain ':', targets may).
 */
public final class UnshareMounts {

    /**
     * Performs the entries in its arguments, in order, on the layer the {@code root:} entry names ({@code L}); the
     * {@code workdir:} entry sets {@code W}, which the init creates after it has pivoted into the root. A {@code node:}
     * entry takes its owner ({@code O}) from the {@code dev:} entry before it (0 without one).
     */
    public static final String SCRIPT = """
            O=0
            for e in "$@"; do
              p=${e#*:}
              case $e in
                root:*) L=$p; mount --bind "$L" "$L"; mount -o remount,bind,nosuid,nodev "$L" ;;
                vol:*) m=${p%%=*}; mkdir -p "$L$m"; mount --bind -o nosuid,nodev "${p#*=}" "$L$m" ;;
                rovol:*) m=${p%%=*}; mkdir -p "$L$m"; mount --bind "${p#*=}" "$L$m"; mount -o remount,bind,ro,nosuid,nodev "$L$m" ;;
                ro:*) mkdir -p "$L$p"; mount --bind -o ro,nosuid,nodev "$p" "$L$p" ;;
                robind:*) m=${p%%=*}; mount --bind -o ro,nosuid,nodev "${p#*=}" "$L$m" ;;
                self:*) mount --bind "$L$p" "$L$p" ;;
                maskfile:*) mount --bind -o ro /dev/null "$L$p" ;;
                maskdir:*) mount -t tmpfs -o "ro,nosuid,nodev,noexec,mode=${p%%:*},size=4k" chalk-mask "$L${p#*:}" ;;
                proc:*) mkdir -p "$L$p"; mount -t proc -o nosuid,nodev,noexec proc "$L$p" ;;
                procro:*) if [ -e "$L$p" ]; then mount --bind -o ro "$L$p" "$L$p"; fi ;;
                dev:*)
                  n=${p%%:*}; p=${p#*:}; O=${p%%:*}; p=${p#*:}
                  mkdir -p "$L$p"
                  mount -t tmpfs -o nosuid,mode=0755,uid=$O,gid=$O,size=1m,nr_inodes=4096 chalk-dev "$L$p"
                  mkdir "$L$p/pts" "$L$p/shm"
                  mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,max=$n devpts "$L$p/pts"
                  [ "$O" = 0 ] || chown "$O:$O" "$L$p/pts" "$L$p/pts/ptmx"
                  mount -t tmpfs -o nosuid,nodev,mode=1777,nr_inodes=16384 chalk-shm "$L$p/shm"
                  ln -s pts/ptmx "$L$p/ptmx"
                  ln -s /proc/self/fd "$L$p/fd"
                  ln -s /proc/self/fd/0 "$L$p/stdin"
                  ln -s /proc/self/fd/1 "$L$p/stdout"
                  ln -s /proc/self/fd/2 "$L$p/stderr" ;;
                node:*) n=${p#*:}; mknod -m 0666 "$L${n#*:}" c "${p%%:*}" "${n%%:*}"
                  [ "$O" = 0 ] || chown "$O:$O" "$L${n#*:}" ;;
                dir:*) mkdir -p "$L${p#*:}"; chmod "${p%%:*}" "$L${p#*:}" ;;
                workdir:*) W=$p ;;
                *) echo "chalk: unknown mount entry $e" >&2; exit 125 ;;
              esac
            done
            """;

    private UnshareMounts() {}

    /** The entries that perform {@code plan}, for {@link #SCRIPT}. */
    public static List<String> render(MountPlan plan) {
        List<String> entries = new ArrayList<>();
        for (MountOp op : plan.ops()) {
            entries.add(entry(op));
        }
        return entries;
    }

    private static String entry(MountOp op) {
        // an if chain: switch patterns over the sealed interface are a preview feature on Java 17
        if (op instanceof MountOp.Root r) {
            return "root:" + r.layer();
        } else if (op instanceof MountOp.Volume v) {
            return bind(v.readOnly() ? "rovol" : "vol", v.target(), v.source().toString());
        } else if (op instanceof MountOp.SystemDir d) {
            return "ro:" + d.target();
        } else if (op instanceof MountOp.ReadOnlyBind b) {
            return bind("robind", b.target(), b.source().toString());
        } else if (op instanceof MountOp.SelfBind s) {
            return "self:" + s.target();
        } else if (op instanceof MountOp.MaskFile m) {
            return "maskfile:" + m.target();
        } else if (op instanceof MountOp.MaskDir m) {
            return "maskdir:" + MountPlan.octal(m.mode()) + ":" + m.target();
        } else if (op instanceof MountOp.Proc p) {
            return "proc:" + p.target();
        } else if (op instanceof MountOp.ProcReadOnly p) {
            return "procro:" + p.target(); // the sandbox's own entry, whenever the kernel has it
        } else if (op instanceof MountOp.Dev d) {
            return "dev:" + SandboxDevices.PTYS + ":" + d.owner() + ":" + d.target();
        } else if (op instanceof MountOp.DeviceNode n) {
            return "node:" + n.major() + ":" + n.minor() + ":" + n.target();
        } else if (op instanceof MountOp.Dir d) {
            return "dir:" + MountPlan.octal(d.mode()) + ":" + d.target();
        } else if (op instanceof MountOp.WorkDir w) {
            return "workdir:" + w.target();
        }
        throw new IllegalArgumentException("no unshare mount entry for " + op);
    }

    private static String bind(String kind, String target, String source) {
        if (target.contains("=")) {
            // the plan refuses such volumes; a runtime path like this would be split in the wrong place
            throw new IllegalArgumentException("a bind target cannot contain '=': " + target);
        }
        return kind + ":" + target + "=" + source;
    }
}
