package ai.chalk.compute;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.sandbox.Sandbox;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.spi.ToolProvider;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The client's packages as jdeps reads them from the compiled classes (every reference in the bytecode, not only
 * imports): which packages depend on each other in a cycle.
 */
class PackageCyclesTest {

    /**
     * The packages still in one cycle, through the client facade: {@code SandboxClient.functions()} returns a deployer
     * whose functions (and scaling groups, remote calls) take a {@code SandboxClient} for their connection, and whose
     * payloads carry {@code Sandbox} handles (function.arrow); evaluation and its judge use each other. Breaking it
     * needs those clients to take a narrower connection type (as datasets take {@code ServerChannel}) and the Arrow
     * codec of sandbox handles to be given by the sandbox package; until then this list may only shrink.
     */
    private static final Set<String> KNOWN_CYCLE = Set.of(
            "ai.chalk.compute.sandbox",
            "ai.chalk.compute.evaluation",
            "ai.chalk.compute.evaluation.judge",
            "ai.chalk.compute.function",
            "ai.chalk.compute.function.arrow",
            "ai.chalk.compute.function.deploy",
            "ai.chalk.compute.function.remote",
            "ai.chalk.compute.scaling");

    private static final Pattern EDGE =
            Pattern.compile("^\\s+(ai\\.chalk\\.compute[\\w.]*)\\s+->\\s+(ai\\.chalk\\.compute[\\w.]*)\\s");

    private static Map<String, Set<String>> graph;
    private static List<Set<String>> cycles;

    @BeforeAll
    static void readDependencies() throws Exception {
        Path classes = Path.of(Sandbox.class
                .getProtectionDomain()
                .getCodeSource()
                .getLocation()
                .toURI());
        ToolProvider jdeps = ToolProvider.findFirst("jdeps").orElseThrow();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int status = jdeps.run(
                new PrintWriter(out), new PrintWriter(err), "-verbose:package", "-filter:none", classes.toString());
        assertThat(status).as("jdeps: " + err).isZero();
        graph = new TreeMap<>();
        for (String line : out.toString().split("\n")) {
            Matcher edge = EDGE.matcher(line);
            if (edge.find()
                    && !edge.group(1).equals(edge.group(2))
                    && !edge.group(2).startsWith("ai.chalk.compute.proto")) {
                graph.computeIfAbsent(edge.group(1), k -> new TreeSet<>()).add(edge.group(2));
                graph.computeIfAbsent(edge.group(2), k -> new TreeSet<>());
            }
        }
        cycles = stronglyConnected(graph);
    }

    @Test
    void jdepsSeesTheClientsPackages() {
        assertThat(graph.keySet())
                .contains("ai.chalk.compute.sandbox", "ai.chalk.compute.files", "ai.chalk.compute.git");
        assertThat(graph.get("ai.chalk.compute.sandbox"))
                .as("the facade hands out the helpers built on exec")
                .contains("ai.chalk.compute.files", "ai.chalk.compute.git");
    }

    @Test
    void theHelpersBuiltOnExecAreInNoCycleWithTheSandboxThatHandsThemOut() {
        assertThat(graph.get("ai.chalk.compute.files")).doesNotContain("ai.chalk.compute.sandbox");
        assertThat(graph.get("ai.chalk.compute.git")).doesNotContain("ai.chalk.compute.sandbox");
        assertThat(cycles)
                .as("cycles among the client's packages")
                .allSatisfy(cycle -> assertThat(cycle)
                        .doesNotContain(
                                "ai.chalk.compute.files", "ai.chalk.compute.git", "ai.chalk.compute.sandbox.spi"));
    }

    @Test
    void datasetsDependOnTheConnectionNotOnTheClientFacadeThatHandsThemOut() {
        assertThat(graph.get("ai.chalk.compute.sandbox")).contains("ai.chalk.compute.dataset");
        assertThat(graph.get("ai.chalk.compute.dataset")).doesNotContain("ai.chalk.compute.sandbox");
        assertThat(cycles).allSatisfy(cycle -> assertThat(cycle).doesNotContain("ai.chalk.compute.dataset"));
    }

    @Test
    void noPackageJoinsACycleBeyondTheKnownOneThroughTheClientFacade() {
        assertThat(cycles)
                .as("cycles among the client's packages")
                .allSatisfy(cycle -> assertThat(KNOWN_CYCLE).containsAll(cycle));
    }

    /** Tarjan's algorithm: the groups of two or more packages that reach each other. */
    private static List<Set<String>> stronglyConnected(Map<String, Set<String>> edges) {
        Map<String, Integer> index = new HashMap<>();
        Map<String, Integer> low = new HashMap<>();
        Deque<String> stack = new ArrayDeque<>();
        Set<String> onStack = new TreeSet<>();
        List<Set<String>> found = new ArrayList<>();
        int[] counter = {0};
        for (String start : edges.keySet()) {
            if (!index.containsKey(start)) {
                connect(start, edges, index, low, stack, onStack, found, counter);
            }
        }
        return found;
    }

    private static void connect(
            String v,
            Map<String, Set<String>> edges,
            Map<String, Integer> index,
            Map<String, Integer> low,
            Deque<String> stack,
            Set<String> onStack,
            List<Set<String>> found,
            int[] counter) {
        index.put(v, counter[0]);
        low.put(v, counter[0]);
        counter[0]++;
        stack.push(v);
        onStack.add(v);
        for (String w : edges.getOrDefault(v, Set.of())) {
            if (!index.containsKey(w)) {
                connect(w, edges, index, low, stack, onStack, found, counter);
                low.put(v, Math.min(low.get(v), low.get(w)));
            } else if (onStack.contains(w)) {
                low.put(v, Math.min(low.get(v), index.get(w)));
            }
        }
        if (low.get(v).equals(index.get(v))) {
            Set<String> component = new TreeSet<>();
            String w;
            do {
                w = stack.pop();
                onStack.remove(w);
                component.add(w);
            } while (!w.equals(v));
            if (component.size() > 1) {
                found.add(component);
            }
        }
    }
}
