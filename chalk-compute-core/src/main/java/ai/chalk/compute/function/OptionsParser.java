package ai.chalk.compute.function;

import ai.chalk.compute.image.Image;
import ai.chalk.compute.network.Credential;
import ai.chalk.compute.network.NetworkPolicy;
import ai.chalk.compute.secret.Secret;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Turns annotation attributes into {@link DeploymentOptions} and {@link CallOptions}, rejecting malformed ones. */
final class OptionsParser {

    private static final Pattern QUANTITY = Pattern.compile("[0-9]+(\\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?");
    private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
    private static final Pattern SECONDS = Pattern.compile("([0-9]+)(s|m|h)?");

    private OptionsParser() {}

    /**
     * The deployment options.
     *
     * @param declared the attributes as written
     * @param owner    the annotated class, where a short {@code imageFactory} name is looked up
     * @param where    the method or class, starting error messages
     */
    static DeploymentOptions deployment(DeclaredOptions declared, Class<?> owner, String where) {
        Optional<Image> image = image(declared, owner, where);
        Optional<String> cpu = quantity("cpu", declared.cpu(), where);
        Optional<String> memory = quantity("memory", declared.memory(), where);
        Map<String, String> env = new LinkedHashMap<>();
        for (int i = 0; i < declared.env().length; i++) {
            String entry = declared.env()[i];
            int eq = entry.indexOf('=');
            if (eq <= 0 || !ENV_NAME.matcher(entry.substring(0, eq)).matches()) {
                // the entry's name, never its value: values are API keys as often as not, and this message goes to
                // the log and to /actuator/chalkfunctions
                String shown = eq < 0
                        ? "#" + (i + 1) + " (no '=')"
                        : "#" + (i + 1) + " (named '" + entry.substring(0, eq) + "')";
                throw new FunctionDefinitionException(
                        where + ": env entry " + shown + " is not of the form KEY=value with KEY a variable name");
            }
            if (env.put(entry.substring(0, eq), entry.substring(eq + 1)) != null) {
                throw new FunctionDefinitionException(where + ": env sets " + entry.substring(0, eq) + " twice");
            }
        }
        Set<String> secrets = new LinkedHashSet<>();
        for (String secret : declared.secrets()) {
            if (secret.isBlank()) {
                throw new FunctionDefinitionException(where + ": a secret name is blank");
            }
            if (!secrets.add(secret)) {
                throw new FunctionDefinitionException(where + ": secret '" + secret + "' is listed twice");
            }
        }
        try {
            ai.chalk.compute.secret.SecretBindings.ofNames(new ArrayList<>(secrets));
        } catch (IllegalArgumentException e) {
            throw new FunctionDefinitionException(
                    where + ": secrets: " + e.getMessage() + " (each entry is NAME or VAR=NAME)");
        }
        OptionalInt min = count("minReplicas", declared.minReplicas(), 0, where);
        OptionalInt max = count("maxReplicas", declared.maxReplicas(), 1, where);
        if (min.isPresent() && max.isPresent() && min.getAsInt() > max.getAsInt()) {
            throw new FunctionDefinitionException(
                    where + ": minReplicas " + min.getAsInt() + " is greater than maxReplicas " + max.getAsInt());
        }
        DeploymentOptions options = new DeploymentOptions(image, cpu, memory, env, new ArrayList<>(secrets), min, max)
                .withCredentials(credentials(declared, where));
        if (!declared.gpu().isBlank()) {
            options = options.withGpu(declared.gpu().strip());
        }
        Optional<NetworkPolicy> network = network(declared, where);
        return network.isPresent() ? options.withNetwork(network.get()) : options;
    }

    /** The policy of {@code network} and {@code allowedHosts}; empty for {@code "inherit"} without hosts. */
    private static Optional<NetworkPolicy> network(DeclaredOptions declared, String where) {
        String mode = declared.network();
        List<String> hosts = List.of(declared.allowedHosts());
        try {
            return switch (mode) {
                case "inherit" ->
                    hosts.isEmpty()
                            ? Optional.empty()
                            : Optional.of(NetworkPolicy.none().allowHosts(hosts));
                case "allowlist" -> Optional.of(NetworkPolicy.none().allowHosts(hosts));
                case "none", "all" -> {
                    if (!hosts.isEmpty()) {
                        throw new FunctionDefinitionException(where + ": allowedHosts needs network \"allowlist\" (or"
                                + " \"inherit\"), not \"" + mode + "\"");
                    }
                    yield Optional.of(mode.equals("all") ? NetworkPolicy.all() : NetworkPolicy.none());
                }
                default ->
                    throw new FunctionDefinitionException(
                            where + ": network '" + mode + "' is none of inherit, none, allowlist, all");
            };
        } catch (IllegalArgumentException e) {
            throw new FunctionDefinitionException(where + ": allowedHosts: " + e.getMessage());
        }
    }

    /** The credentials of {@code credentials}, each {@code HOST[,HOST...]=SECRET}. */
    private static List<Credential> credentials(DeclaredOptions declared, String where) {
        List<Credential> all = new ArrayList<>();
        for (String entry : declared.credentials()) {
            int eq = entry.lastIndexOf('=');
            if (eq <= 0 || eq == entry.length() - 1) {
                throw new FunctionDefinitionException(
                        where + ": credentials entry '" + entry + "' is not of the form HOST[,HOST...]=SECRET");
            }
            try {
                all.add(new Credential(
                        List.of(entry.substring(0, eq).split(",")).stream()
                                .map(String::strip)
                                .toList(),
                        Secret.fromChalkEnv(entry.substring(eq + 1).strip())));
            } catch (IllegalArgumentException e) {
                throw new FunctionDefinitionException(where + ": credentials entry '" + entry + "': " + e.getMessage());
            }
        }
        return all;
    }

    /** The call options; {@code where} starts error messages. */
    static CallOptions call(DeclaredOptions declared, String where) {
        return new CallOptions(
                timeout(declared.timeout(), where),
                count("retries", declared.retries(), 0, where),
                count("concurrency", declared.concurrency(), 1, where));
    }

    private static Optional<Image> image(DeclaredOptions declared, Class<?> owner, String where) {
        String reference = declared.image();
        String factory = declared.imageFactory();
        if (!reference.isEmpty() && !factory.isEmpty()) {
            throw new FunctionDefinitionException(where + ": set image or imageFactory, not both");
        }
        if (!reference.isEmpty()) {
            if (reference.isBlank() || reference.chars().anyMatch(Character::isWhitespace)) {
                throw new FunctionDefinitionException(where + ": image '" + reference + "' is not an image reference");
            }
            return Optional.of(Image.base(reference));
        }
        return factory.isEmpty() ? Optional.empty() : Optional.of(callFactory(factory, owner, where));
    }

    private static Image callFactory(String factory, Class<?> owner, String where) {
        int hash = factory.indexOf('#');
        Class<?> type = owner;
        String methodName = factory;
        if (hash >= 0) {
            methodName = factory.substring(hash + 1);
            try {
                type = Class.forName(factory.substring(0, hash), true, owner.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new FunctionDefinitionException(
                        where + ": imageFactory '" + factory + "' names class " + factory.substring(0, hash)
                                + ", which cannot be found",
                        e);
            }
        }
        Method method;
        try {
            method = type.getDeclaredMethod(methodName);
        } catch (NoSuchMethodException e) {
            throw new FunctionDefinitionException(
                    where + ": imageFactory '" + factory + "' names no parameterless method " + methodName + "() in "
                            + type.getName(),
                    e);
        }
        if (!Modifier.isStatic(method.getModifiers()) || !Image.class.isAssignableFrom(method.getReturnType())) {
            throw new FunctionDefinitionException(where + ": imageFactory '" + factory
                    + "' must name a static method returning Image, but " + type.getName() + "." + methodName
                    + "() is " + (Modifier.isStatic(method.getModifiers()) ? "" : "not static and ") + "returns "
                    + method.getReturnType().getSimpleName());
        }
        method.trySetAccessible();
        try {
            Image image = (Image) method.invoke(null);
            if (image == null) {
                throw new FunctionDefinitionException(where + ": imageFactory '" + factory + "' returned null");
            }
            return image;
        } catch (InvocationTargetException e) {
            throw new FunctionDefinitionException(
                    where + ": imageFactory '" + factory + "' threw " + e.getCause(), e.getCause());
        } catch (IllegalAccessException e) {
            throw new FunctionDefinitionException(
                    where + ": imageFactory '" + factory + "' cannot be called: " + e.getMessage(), e);
        }
    }

    private static Optional<String> quantity(String attribute, String value, String where) {
        if (value.isEmpty()) {
            return Optional.empty();
        }
        if (!QUANTITY.matcher(value).matches()) {
            throw new FunctionDefinitionException(
                    where + ": " + attribute + " '" + value + "' is not a Kubernetes quantity such as "
                            + ("cpu".equals(attribute) ? "\"2\" or \"500m\"" : "\"4Gi\""));
        }
        return Optional.of(value);
    }

    private static OptionalInt count(String attribute, int value, int least, String where) {
        if (value == -1) {
            return OptionalInt.empty();
        }
        if (value < least) {
            throw new FunctionDefinitionException(where + ": " + attribute + " is " + value + "; it must be at least "
                    + least + " (or -1 for the default)");
        }
        return OptionalInt.of(value);
    }

    /** ISO-8601 ({@code PT5M}), a number of seconds ({@code 300}), or a number with s, m or h. */
    static Optional<Duration> timeout(String value, String where) {
        if (value.isEmpty()) {
            return Optional.empty();
        }
        Duration duration = null;
        Matcher seconds = SECONDS.matcher(value);
        try {
            if (seconds.matches()) {
                long amount = Long.parseLong(seconds.group(1));
                String unit = seconds.group(2) == null ? "s" : seconds.group(2);
                duration = switch (unit) {
                    case "m" -> Duration.ofMinutes(amount);
                    case "h" -> Duration.ofHours(amount);
                    default -> Duration.ofSeconds(amount);
                };
            } else {
                duration = Duration.parse(value);
            }
        } catch (DateTimeParseException | ArithmeticException | NumberFormatException e) {
            duration = null;
        }
        if (duration == null) {
            throw new FunctionDefinitionException(where + ": timeout '" + value
                    + "' is neither an ISO-8601 duration (PT5M) nor a number of seconds (300, 300s, 5m, 1h)");
        }
        if (duration.isZero() || duration.isNegative()) {
            throw new FunctionDefinitionException(where + ": timeout '" + value + "' must be longer than zero");
        }
        return Optional.of(duration);
    }
}
