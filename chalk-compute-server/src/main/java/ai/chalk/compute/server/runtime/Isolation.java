package ai.chalk.compute.server.runtime;

/**
 * The isolation a runtime puts around each sandbox, as actually in force on this host.
 *
 * @param level    {@code bubblewrap}, {@code unshare}, {@code container} or {@code none}
 * @param detail   a sentence for logs and health, e.g. which namespaces and cgroup controllers are used
 * @param isolated whether sandboxes get their own PID, mount, network, IPC and UTS namespaces
 */
public record Isolation(String level, String detail, boolean isolated) {}
