package ai.chalk.compute.server.runtime;

import java.util.LinkedHashMap;
import java.util.Map;

/** The checks every runtime makes on a command line and an environment before it starts anything. */
public final class ProcessSpecCheck {

    private ProcessSpecCheck() {}

    /** Fails when {@code spec} names no command, or its command line contains a NUL character. */
    public static void commandLine(ProcessSpec spec) throws ProcessStartException {
        if (spec.command() == null || spec.command().isEmpty()) {
            throw new ProcessStartException("no command given");
        }
        if (spec.command().indexOf('\0') >= 0 || spec.args().stream().anyMatch(a -> a.indexOf('\0') >= 0)) {
            throw new ProcessStartException("the command line contains a NUL character");
        }
    }

    /**
     * Fails on a variable name that is empty or contains {@code =} or NUL, or a value that is null or contains NUL;
     * returns the variables in their order.
     */
    public static Map<String, String> env(Map<String, String> vars) throws ProcessStartException {
        Map<String, String> checked = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : vars.entrySet()) {
            String k = e.getKey();
            if (k.isEmpty() || k.indexOf('=') >= 0 || k.indexOf('\0') >= 0) {
                throw new ProcessStartException("invalid environment variable name: \"" + k + "\"");
            }
            if (e.getValue() == null || e.getValue().indexOf('\0') >= 0) {
                throw new ProcessStartException("invalid value for environment variable " + k);
            }
            checked.put(k, e.getValue());
        }
        return checked;
    }
}
