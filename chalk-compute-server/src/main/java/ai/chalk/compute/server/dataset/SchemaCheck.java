package ai.chalk.compute.server.dataset;

import ai.chalk.compute.server.dataset.DatasetManager.RefusedFile;
import ai.chalk.compute.server.store.DatasetStore.DatasetColumn;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

/** The files of one revision have one schema: the same column names, in the same order, of the same types. */
final class SchemaCheck {

    private SchemaCheck() {}

    /**
     * @throws RefusedFile naming both files and the first column that differs
     */
    static void requireSame(String firstLabel, List<DatasetColumn> first, String label, List<DatasetColumn> other)
            throws RefusedFile {
        Map<String, DatasetColumn> byName =
                first.stream().collect(Collectors.toMap(DatasetColumn::name, Function.identity(), (a, b) -> a));
        Map<String, DatasetColumn> otherByName =
                other.stream().collect(Collectors.toMap(DatasetColumn::name, Function.identity(), (a, b) -> a));
        String prefix = "the files of one upload must have one schema: ";
        for (DatasetColumn c : other) {
            DatasetColumn expected = byName.get(c.name());
            if (expected == null) {
                throw new RefusedFile(
                        prefix + label + " has column \"" + c.name() + "\" that " + firstLabel + " lacks");
            }
            if (!expected.type().equals(c.type())) {
                throw new RefusedFile(prefix + label + " has column \"" + c.name() + "\" of type " + c.type()
                        + " where " + firstLabel + " has " + expected.type());
            }
        }
        for (DatasetColumn c : first) {
            if (!otherByName.containsKey(c.name())) {
                throw new RefusedFile(
                        prefix + label + " lacks column \"" + c.name() + "\" that " + firstLabel + " has");
            }
        }
        for (int i = 0; i < first.size(); i++) {
            if (!first.get(i).name().equals(other.get(i).name())) {
                throw new RefusedFile(prefix + label + " has column \""
                        + other.get(i).name() + "\" at position " + (i + 1) + " where " + firstLabel + " has \""
                        + first.get(i).name() + "\"");
            }
        }
    }
}
