package ai.chalk.compute.function.arrow;

/**
 * Where a value sits in a payload, for error messages: {@code row 3, column 'order' at order.lines[2].sku}.
 * Built as a chain so that nothing is formatted unless an error is reported.
 */
final class Location {

    private final Location parent;
    private final String segment;
    private final int row;

    private Location(Location parent, String segment, int row) {
        this.parent = parent;
        this.segment = segment;
        this.row = row;
    }

    /** The value of a column in a row; rows count from 0. */
    static Location cell(int row, String column) {
        return new Location(null, column, row);
    }

    /** A record component, for example {@code .sku}. */
    Location component(String name) {
        return new Location(this, "." + name, -1);
    }

    /** A list element, for example {@code [2]}. */
    Location element(int index) {
        return new Location(this, "[" + index + "]", -1);
    }

    /** A map entry's key or value, for example {@code {key}}. */
    Location mapPart(String part) {
        return new Location(this, "{" + part + "}", -1);
    }

    @Override
    public String toString() {
        StringBuilder path = new StringBuilder();
        Location l = this;
        while (l.parent != null) {
            path.insert(0, l.segment);
            l = l.parent;
        }
        String cell = "row " + l.row + ", column '" + l.segment + "'";
        return path.length() == 0 ? cell : cell + " at " + l.segment + path;
    }
}
