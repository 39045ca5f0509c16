package ai.chalk.compute.server;

import java.util.Locale;

/** Which sandbox runtime a server runs its sandboxes on. */
public enum RuntimeChoice {
    /** Namespaces on this machine, no daemon (the default). */
    LOCAL,
    /** A Docker Engine; the server does not start when none answers. */
    DOCKER,
    /** Docker when an engine answers within two seconds, else local. */
    AUTO;

    /**
     * The choice named {@code name} ({@code local}, {@code docker} or {@code auto}, any case), as the command line
     * and configuration properties say it.
     *
     * @throws IllegalArgumentException naming the choices, for any other name
     */
    public static RuntimeChoice parse(String name) {
        String n = name == null ? "" : name.strip().toLowerCase(Locale.ROOT);
        for (RuntimeChoice c : values()) {
            if (c.label().equals(n)) {
                return c;
            }
        }
        String later = n.equals("kubernetes") ? " (kubernetes is not part of this server version)" : "";
        throw new IllegalArgumentException(
                "unknown runtime \"" + name + "\"" + later + ": choose local, docker or auto");
    }

    /** The name as the command line says it. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }
}
