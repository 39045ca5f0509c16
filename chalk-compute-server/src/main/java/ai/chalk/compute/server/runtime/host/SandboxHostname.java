package ai.chalk.compute.server.runtime.host;

import java.util.Locale;

/** The host name a sandbox gets from its id. */
public final class SandboxHostname {

    private SandboxHostname() {}

    /** A short host name for a sandbox id: at most 12 lower-case letters, digits and dashes. */
    public static String of(String id) {
        String s = id.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9-]", "-");
        if (s.length() > 12) {
            s = s.replace("-", "");
            s = s.substring(0, Math.min(12, s.length()));
        }
        s = s.replaceAll("^-+|-+$", "");
        return s.isEmpty() ? "sandbox" : s;
    }
}
