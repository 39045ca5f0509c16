package ai.chalk.compute.server.runtime.local;

/** How much isolation the local runtime insists on. */
public enum LocalIsolation {
    /** Bubblewrap when it works, else util-linux {@code unshare}/{@code nsenter}, else plain processes with a loud warning. */
    AUTO,
    /** Like {@link #AUTO}, but refuses to start when no isolation tool works on this host. */
    REQUIRED,
    /** Plain host processes, for hosts without namespaces; sandboxes see and can change the whole host. */
    NONE
}
