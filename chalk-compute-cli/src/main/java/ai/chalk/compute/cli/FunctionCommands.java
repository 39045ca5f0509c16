package ai.chalk.compute.cli;

import ai.chalk.compute.function.catalog.FunctionVersion;
import ai.chalk.compute.function.deploy.CatalogField;
import ai.chalk.compute.function.deploy.CatalogFunction;
import ai.chalk.compute.function.remote.RemoteFunction;
import ai.chalk.compute.sandbox.SandboxClient;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.lang.reflect.Type;
import java.time.temporal.TemporalAccessor;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

/** {@code chalk-compute function ...}: the deployed functions, calling one, its versions and rolling back. */
@CommandLine.Command(
        name = "function",
        description = "List deployed functions, call one, show its versions, roll it back.",
        subcommands = {
            FunctionCommands.ListFunctions.class,
            FunctionCommands.Call.class,
            FunctionCommands.Versions.class,
            FunctionCommands.Rollback.class
        })
final class FunctionCommands extends CommandGroup {

    private static final ObjectMapper JSON = new ObjectMapper();

    FunctionCommands() {
        super("list, call, versions or rollback");
    }

    @CommandLine.Command(name = "list", description = "List the deployed functions with their current version.")
    static final class ListFunctions implements Callable<Integer> {
        @Mixin
        CommandContext context;

        @Override
        public Integer call() {
            try (SandboxClient client = context.connect()) {
                List<String[]> rows = new ArrayList<>();
                rows.add(new String[] {"NAME", "VERSION", "SIGNATURE"});
                for (CatalogFunction f : client.functions().list()) {
                    rows.add(new String[] {
                        f.name(), String.valueOf(f.currentVersion().version()), f.signature()
                    });
                }
                Table.print(context.out(), rows);
            }
            return 0;
        }
    }

    @CommandLine.Command(
            name = "call",
            description = {
                "Call a function's current version and print its result as JSON.",
                "Each argument is JSON (42, \"text\", [1,2], {\"k\":1}); text that is not JSON is a string."
            })
    static final class Call implements Callable<Integer> {
        @Mixin
        CommandContext context;

        @Parameters(index = "0", paramLabel = "NAME", description = "The function.")
        String name = "";

        @Parameters(index = "1..*", paramLabel = "ARG", description = "Its arguments, in order.")
        List<String> arguments = new ArrayList<>();

        @Override
        public Integer call() throws JsonProcessingException {
            try (SandboxClient client = context.connect()) {
                CatalogFunction function = find(client, name);
                Object[] values = arguments(function, arguments);
                // the version whose schema the arguments were converted for, even if a deploy lands meanwhile
                RemoteFunction remote = RemoteFunction.fromVersionId(
                        client, function.currentVersion().id());
                Object result = remote.call(values);
                context.out().println(JSON.writeValueAsString(jsonable(result)));
            }
            return 0;
        }
    }

    @CommandLine.Command(name = "versions", description = "List a function's versions, the current one marked *.")
    static final class Versions implements Callable<Integer> {
        @Mixin
        CommandContext context;

        @Parameters(index = "0", paramLabel = "NAME", description = "The function.")
        String name = "";

        @Override
        public Integer call() {
            try (SandboxClient client = context.connect()) {
                List<String[]> rows = new ArrayList<>();
                rows.add(new String[] {"", "VERSION", "ID", "CREATED"});
                for (FunctionVersion v : client.functions().versions(name)) {
                    rows.add(new String[] {
                        v.current() ? "*" : "", String.valueOf(v.version()), v.id(), SandboxCommands.time(v.createdAt())
                    });
                }
                Table.print(context.out(), rows);
            }
            return 0;
        }
    }

    @CommandLine.Command(name = "rollback", description = "Make an earlier version current again: all calls go to it.")
    static final class Rollback implements Callable<Integer> {
        @Mixin
        CommandContext context;

        @Parameters(index = "0", paramLabel = "NAME", description = "The function.")
        String name = "";

        @Parameters(index = "1", paramLabel = "VERSION", description = "The version's number or id.")
        String version = "";

        @Override
        public Integer call() {
            try (SandboxClient client = context.connect()) {
                List<FunctionVersion> versions = client.functions().versions(name);
                FunctionVersion target = versions.stream()
                        .filter(v -> v.id().equals(version)
                                || String.valueOf(v.version()).equals(version))
                        .findFirst()
                        .orElseThrow(() -> new IllegalArgumentException(name + " has no version " + version
                                + "; its versions are "
                                + versions.stream()
                                        .map(v -> String.valueOf(v.version()))
                                        .collect(Collectors.joining(", "))));
                client.functions().rollback(target.functionId(), target.id());
                context.out().println(name + ": version " + target.version() + " is current");
            }
            return 0;
        }
    }

    private static CatalogFunction find(SandboxClient client, String name) {
        List<CatalogFunction> all = client.functions().list();
        Optional<CatalogFunction> found =
                all.stream().filter(f -> f.name().equals(name)).findFirst();
        return found.orElseThrow(() -> new IllegalArgumentException("no function named " + name
                + (all.isEmpty()
                        ? "; none is deployed"
                        : "; deployed: "
                                + all.stream().map(CatalogFunction::name).collect(Collectors.joining(", ")))));
    }

    /** The typed arguments, each converted to its parameter's Java type as the catalog gives it. */
    static Object[] arguments(CatalogFunction function, List<String> texts) {
        List<CatalogField> parameters = function.parameters();
        if (texts.size() > parameters.size()) {
            throw new IllegalArgumentException(function.name() + " takes " + parameters.size() + " argument(s), got "
                    + texts.size() + ": " + function.signature());
        }
        long required = function.requiredParameters().size();
        if (texts.size() < required) {
            throw new IllegalArgumentException(function.name() + " needs at least " + required + " argument(s), got "
                    + texts.size() + ": " + function.signature());
        }
        Object[] values = new Object[texts.size()];
        for (int i = 0; i < texts.size(); i++) {
            values[i] = argument(parameters.get(i), texts.get(i));
        }
        return values;
    }

    private static @Nullable Object argument(CatalogField parameter, String text) {
        JsonNode node;
        try {
            node = JSON.readTree(text);
        } catch (JsonProcessingException e) {
            node = JSON.getNodeFactory().textNode(text);
        }
        if (node == null || node.isMissingNode()) {
            node = JSON.getNodeFactory().textNode(text);
        }
        if (node.isNull()) {
            return null;
        }
        Optional<Type> type = parameter.javaType();
        if (type.isEmpty()) {
            return JSON.convertValue(node, Map.class);
        }
        if (type.get() == String.class && !node.isTextual()) {
            return text; // 42 for a String parameter means the text "42"
        }
        try {
            return JSON.convertValue(node, JSON.constructType(type.get()));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("argument " + parameter.name() + ": " + text + " is not a "
                    + type.get().getTypeName().replaceAll("\\b[a-z][\\w]*\\.", ""));
        }
    }

    /** The result as JSON can show it: times as ISO-8601 text, maps and lists within. */
    static @Nullable Object jsonable(@Nullable Object value) {
        if (value instanceof Map<?, ?> map) {
            Map<String, Object> copy = new LinkedHashMap<>();
            map.forEach((k, v) -> copy.put(String.valueOf(k), jsonable(v)));
            return copy;
        }
        if (value instanceof List<?> list) {
            List<Object> copy = new ArrayList<>();
            list.forEach(v -> copy.add(jsonable(v)));
            return copy;
        }
        if (value instanceof TemporalAccessor time) {
            return time.toString();
        }
        return value;
    }
}
