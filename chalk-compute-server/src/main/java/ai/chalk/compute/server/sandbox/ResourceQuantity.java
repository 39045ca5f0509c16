package ai.chalk.compute.server.sandbox;

import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.runtime.SandboxSpec;
import java.math.BigDecimal;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parses Kubernetes-style resource quantities as Chalk accepts them: CPU as {@code "2"},
 * {@code "0.5"} or {@code "500m"}; memory as {@code "4Gi"}, {@code "512Mi"}, {@code "1G"} or bytes.
 */
final class ResourceQuantity {

    private static final Pattern CPU = Pattern.compile("^([0-9]+(?:\\.[0-9]+)?)(m?)$");
    private static final Pattern MEMORY = Pattern.compile("^([0-9]+(?:\\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|K|M|G|T)?$");
    private static final Map<String, Long> MEMORY_UNITS = Map.of(
            "Ki",
            1L << 10,
            "Mi",
            1L << 20,
            "Gi",
            1L << 30,
            "Ti",
            1L << 40,
            "k",
            1_000L,
            "K",
            1_000L,
            "M",
            1_000_000L,
            "G",
            1_000_000_000L,
            "T",
            1_000_000_000_000L);

    private ResourceQuantity() {}

    /**
     * The limits a cpu and a memory quantity ask for; a quantity unset or blank sets no limit.
     *
     * @throws io.grpc.StatusRuntimeException INVALID_ARGUMENT naming the field when a quantity is malformed
     */
    static SandboxSpec.ResourceLimits limits(
            String cpuField, boolean hasCpu, String cpu, String memoryField, boolean hasMemory, String memory) {
        return new SandboxSpec.ResourceLimits(
                hasCpu && !cpu.isBlank() ? Optional.of(milliCpus(cpuField, cpu)) : Optional.empty(),
                hasMemory && !memory.isBlank() ? Optional.of(bytes(memoryField, memory)) : Optional.empty());
    }

    /** CPU in thousandths of a core. */
    static long milliCpus(String field, String value) {
        Matcher m = CPU.matcher(value.trim());
        if (!m.matches()) {
            throw invalid(field, value, "a number of cores such as \"2\", \"0.5\" or \"500m\"");
        }
        BigDecimal n = new BigDecimal(m.group(1));
        BigDecimal milliExact = m.group(2).isEmpty() ? n.movePointRight(3) : n;
        if (milliExact.compareTo(BigDecimal.valueOf(1_000_000_000L)) > 0) {
            throw invalid(field, value, "at most 1000000 cores");
        }
        long milli = milliExact.longValue();
        if (milli <= 0) {
            throw invalid(field, value, "more than zero cores");
        }
        return milli;
    }

    /** Memory in bytes. */
    static long bytes(String field, String value) {
        Matcher m = MEMORY.matcher(value.trim());
        if (!m.matches()) {
            throw invalid(field, value, "a size such as \"512Mi\", \"4Gi\" or \"1G\"");
        }
        BigDecimal n = new BigDecimal(m.group(1));
        long unit = m.group(2) == null ? 1 : MEMORY_UNITS.get(m.group(2));
        BigDecimal exact = n.multiply(BigDecimal.valueOf(unit));
        if (exact.compareTo(BigDecimal.valueOf(1L << 50)) > 0) {
            throw invalid(field, value, "at most 1Pi");
        }
        long bytes = exact.longValue();
        if (bytes < 4L << 20) {
            throw invalid(field, value, "at least 4Mi");
        }
        return bytes;
    }

    private static RuntimeException invalid(String field, String value, String expected) {
        return ComputeException.invalid(field + " \"" + value + "\" is not valid: expected " + expected);
    }
}
