package ai.chalk.compute.server.evaluation;

import ai.chalk.compute.proto.arrow.v1.Field;
import ai.chalk.compute.proto.evaluation.v1.BuiltinScorer;
import ai.chalk.compute.proto.evaluation.v1.EvaluationScorer;
import ai.chalk.compute.proto.evaluation.v1.EvaluationScorerSpec;
import ai.chalk.compute.proto.evaluation.v1.FunctionScorer;
import ai.chalk.compute.server.dataset.DatasetManager;
import ai.chalk.compute.server.dataset.DatasetManager.ReadableRevision;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.evaluation.scorer.BuiltinScorers;
import ai.chalk.compute.server.evaluation.scorer.Embedders;
import ai.chalk.compute.server.function.FunctionWorkers;
import ai.chalk.compute.server.store.DatasetStore.DatasetColumn;
import ai.chalk.compute.server.store.DatasetStore.DatasetRecord;
import ai.chalk.compute.server.store.FunctionStore;
import ai.chalk.compute.server.store.FunctionStore.VersionRecord;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.BiFunction;
import org.jspecify.annotations.Nullable;

/**
 * Resolves what a new evaluation pins and refuses what could never run: the dataset (a name or id becomes its latest
 * completed revision now, so later uploads do not change the evaluation), the task and scorer function versions (of
 * the caller's environment, not deleted), the built-in scorers (parsed with their options), and every function
 * parameter or built-in input must name a dataset column ({@code output} and {@code trace} too for scorers).
 */
final class EvaluationPins {

    /** What scorers may read besides the dataset's columns. */
    static final List<String> SCORER_EXTRAS = List.of("output", "trace");

    /**
     * The pinned dataset revision.
     *
     * @param datasetId  the dataset's id
     * @param revisionId the revision every run reads
     * @param columns    the revision's columns
     */
    record PinnedDataset(String datasetId, String revisionId, List<String> columns) {}

    private final DatasetManager datasets;
    private final FunctionStore functions;
    /** A secret's value by environment and name, or null: the API key of an embedding endpoint. */
    private final BiFunction<String, String, @Nullable String> secrets;

    EvaluationPins(
            DatasetManager datasets, FunctionStore functions, BiFunction<String, String, @Nullable String> secrets) {
        this.datasets = datasets;
        this.functions = functions;
        this.secrets = secrets;
    }

    /** The built-ins as the environment configures them: an embedding endpoint's key is one of its secrets. */
    BuiltinScorers builtins(String environment) {
        return new BuiltinScorers(new Embedders(name -> secrets.apply(environment, name)));
    }

    /** The revision given, or else the latest completed revision of the dataset given by id or name. */
    PinnedDataset dataset(String environment, String datasetId, String datasetName, String revisionId) {
        if (!revisionId.isEmpty()) {
            ReadableRevision r = datasets.readableRevision(environment, revisionId);
            DatasetRecord d = datasets.dataset(environment, r.datasetName());
            if (!datasetId.isEmpty() && !datasetId.equals(d.id()) && !datasetId.equals(d.name())) {
                throw ComputeException.invalid("dataset_revision_id " + revisionId + " is a revision of dataset "
                        + d.name() + " (" + d.id() + "), not of dataset_id " + datasetId);
            }
            return new PinnedDataset(d.id(), r.revisionId(), names(r.columns()));
        }
        String idOrName = !datasetId.isEmpty() ? datasetId : datasetName;
        if (idOrName.isEmpty()) {
            throw ComputeException.invalid(
                    "an evaluation needs its dataset: give dataset_name, dataset_id or dataset_revision_id");
        }
        DatasetRecord d = datasets.dataset(environment, idOrName);
        ReadableRevision r = datasets.latestReadable(environment, d.name())
                .orElseThrow(() -> ComputeException.refused("dataset " + d.name()
                        + " has no completed revision yet; upload one (or wait for its upload to finish)"));
        return new PinnedDataset(d.id(), r.revisionId(), names(r.columns()));
    }

    /** The task's version, whose every parameter must be a dataset column. */
    VersionRecord task(String environment, String versionId, List<String> columns) {
        if (versionId.isEmpty()) {
            throw ComputeException.invalid("task_function_version_id is required: the version of the task function"
                    + " each dataset row goes through");
        }
        VersionRecord v = version(environment, versionId, "task_function_version_id");
        checkBinding("the task function " + functionName(v), v, columns, List.of());
        return v;
    }

    /**
     * The scorers with their ids: a built-in's id is its name, a function's its function's name; a repeated id gets
     * {@code -2}, {@code -3}... so each scorer's columns in the result are distinct.
     */
    List<EvaluationScorer> scorers(String environment, List<EvaluationScorerSpec> specs, List<String> columns) {
        BuiltinScorers builtins = builtins(environment);
        List<EvaluationScorer> out = new ArrayList<>();
        Set<String> ids = new HashSet<>();
        for (int i = 0; i < specs.size(); i++) {
            EvaluationScorerSpec spec = specs.get(i);
            String where = "scorers[" + i + "]";
            String name;
            EvaluationScorerSpec pinned;
            switch (spec.getImplementationCase()) {
                case BUILTIN -> {
                    String id = spec.getBuiltin().getId();
                    ai.chalk.compute.server.evaluation.scorer.BuiltinScorer scorer;
                    try {
                        scorer = builtins.create(id);
                    } catch (IllegalArgumentException e) {
                        throw ComputeException.invalid(where + " (builtin \"" + id + "\"): " + e.getMessage());
                    }
                    Set<String> readable = readable(columns);
                    for (String input : scorer.inputs()) {
                        if (!readable.contains(input)) {
                            throw ComputeException.invalid(where + " (builtin " + scorer.name() + ") reads column '"
                                    + input + "', which the dataset does not have; its columns are " + columns
                                    + " (and the task's output)");
                        }
                    }
                    name = scorer.name();
                    pinned = EvaluationScorerSpec.newBuilder()
                            .setBuiltin(BuiltinScorer.newBuilder().setId(id))
                            .build();
                }
                case FUNCTION -> {
                    VersionRecord v = version(
                            environment, spec.getFunction().getFunctionVersionId(), where + ".function_version_id");
                    name = functionName(v);
                    checkBinding(where + " (the scorer function " + name + ")", v, columns, SCORER_EXTRAS);
                    pinned = EvaluationScorerSpec.newBuilder()
                            .setFunction(FunctionScorer.newBuilder().setFunctionVersionId(v.id()))
                            .build();
                }
                default ->
                    throw ComputeException.invalid(
                            where + " names no scorer: set builtin (a built-in's id) or function (a version id)");
            }
            String id = name;
            for (int n = 2; !ids.add(id); n++) {
                id = name + "-" + n;
            }
            out.add(EvaluationScorer.newBuilder().setId(id).setSpec(pinned).build());
        }
        return out;
    }

    private VersionRecord version(String environment, String id, String field) {
        if (id.isEmpty()) {
            throw ComputeException.invalid(field + " is required");
        }
        return functions
                .version(id)
                .filter(v -> v.environment().equals(environment))
                .filter(v -> v.deletedAt().isEmpty())
                .orElseThrow(() -> ComputeException.notFound(field + ": there is no function version \"" + id
                        + "\" in this environment; ListExternalFunctionVersions lists them"));
    }

    private String functionName(VersionRecord v) {
        return functions
                .function(v.functionId())
                .map(FunctionStore.FunctionRecord::name)
                .orElse(v.functionId());
    }

    /** The function's parameters (its input schema's fields) must each bind to a column or one of {@code extras}. */
    private static void checkBinding(String what, VersionRecord v, List<String> columns, List<String> extras) {
        Set<String> bindable = new LinkedHashSet<>(columns);
        bindable.addAll(extras);
        for (Field parameter : FunctionWorkers.request(v).getInputArrowSchema().getColumnsList()) {
            if (!bindable.contains(parameter.getName())) {
                throw ComputeException.invalid(what + " has parameter '" + parameter.getName()
                        + "', which binds to no dataset column; the dataset's columns are " + columns
                        + (extras.isEmpty() ? "" : " (a scorer may also take " + String.join(" and ", extras) + ")")
                        + ": rename the parameter or the column");
            }
        }
    }

    private static Set<String> readable(List<String> columns) {
        Set<String> s = new HashSet<>(columns);
        s.add("output");
        return s;
    }

    private static List<String> names(List<DatasetColumn> columns) {
        return columns.stream().map(DatasetColumn::name).toList();
    }
}
