package ai.chalk.compute.function;

import ai.chalk.compute.function.arrow.ArrowPayloadException;
import ai.chalk.compute.function.arrow.ArrowTypeMapping;
import ai.chalk.compute.function.arrow.DecodeContext;
import ai.chalk.compute.function.arrow.RowCodec;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The Arrow payloads of one function's calls: arguments encoded by the caller and decoded by the
 * worker, results encoded by the worker and decoded by the caller. Each payload is an Arrow IPC stream
 * with the function's input or output schema, one row per call in a batch.
 * <pre>{@code
 * FunctionPayloads payloads = FunctionPayloads.of(definition);
 * byte[] request = payloads.encodeCall("some text", 3);                 // caller
 * List<Object[]> calls = payloads.decodeArguments(request, context);    // worker
 * byte[] response = payloads.encodeResults(List.of(0.93));              // worker
 * double score = (Double) payloads.decodeResult(response, context);     // caller
 * }</pre>
 * Immutable and thread-safe.
 */
public final class FunctionPayloads {

    private final FunctionDefinition definition;
    private final RowCodec arguments;
    private final RowCodec results;

    private FunctionPayloads(FunctionDefinition definition, RowCodec arguments, RowCodec results) {
        this.definition = definition;
        this.arguments = arguments;
        this.results = results;
    }

    /**
     * The payloads of a function registered with the standard Arrow mapping.
     *
     * @param definition the function
     * @return its payloads
     */
    public static FunctionPayloads of(FunctionDefinition definition) {
        return of(definition, ArrowTypeMapping.standard());
    }

    /**
     * The payloads of a function registered with the given mapping (one with your custom types).
     *
     * @param definition the function
     * @param mapping    the mapping its definition was made with
     * @return its payloads
     */
    public static FunctionPayloads of(FunctionDefinition definition, ArrowTypeMapping mapping) {
        Objects.requireNonNull(definition, "definition");
        return new FunctionPayloads(
                definition,
                RowCodec.of(
                        definition.inputSchema(),
                        definition.parameters().stream()
                                .map(FunctionParameter::type)
                                .toList(),
                        mapping),
                RowCodec.of(definition.outputSchema(), List.of(definition.returnType()), mapping));
    }

    /**
     * Encodes the arguments of one call.
     *
     * @param arguments one value per parameter, in order; parameters with a {@link Default} may be left out at the end
     * @return the Arrow IPC stream
     * @throws ArrowPayloadException when the count is wrong or a value does not fit its parameter
     */
    public byte[] encodeCall(Object... arguments) {
        return encodeBatch(List.<Object[]>of(arguments == null ? new Object[] {null} : arguments));
    }

    /**
     * Encodes the arguments of several calls, one row each, in one payload.
     *
     * @param calls one array of arguments per call; parameters with a {@link Default} may be left out at the end, and
     *              take their default
     * @return the Arrow IPC stream
     * @throws ArrowPayloadException when a count is wrong or a value does not fit its parameter
     */
    public byte[] encodeBatch(List<Object[]> calls) {
        int all = definition.parameters().size();
        int required = arguments.requiredColumns();
        List<Object[]> rows = new ArrayList<>(calls.size());
        for (int row = 0; row < calls.size(); row++) {
            Object[] call = calls.get(row);
            int given = call == null ? 0 : call.length;
            if (call == null || given < required || given > all) {
                throw new ArrowPayloadException("row " + row + ": " + definition.name() + " takes "
                        + counts(required, all) + " " + parameterList() + " but " + given
                        + " were given");
            }
            rows.add(arguments.withDefaults(call)); // the parameters left out at the end take their @Default
        }
        return arguments.encode(rows);
    }

    /**
     * Decodes the arguments of every call in a payload; a parameter the payload lacks takes its
     * {@link Default}, and columns that are not parameters are ignored.
     *
     * @param payload the Arrow IPC bytes
     * @param context services for rebuilding handles passed as arguments
     * @return one array per call, ready for {@link java.lang.reflect.Method#invoke(Object, Object...)}
     * @throws ArrowPayloadException when a required argument is missing or a value does not read as its parameter's type
     */
    public List<Object[]> decodeArguments(byte[] payload, DecodeContext context) {
        return arguments.decode(payload, context);
    }

    /**
     * Encodes results, one row per call.
     *
     * @param values the return values, in the order of the calls
     * @return the Arrow IPC stream
     * @throws ArrowPayloadException when a value does not fit the return type
     */
    public byte[] encodeResults(List<?> values) {
        List<Object[]> rows = new ArrayList<>(values.size());
        for (Object value : values) {
            rows.add(new Object[] {value});
        }
        return results.encode(rows);
    }

    /**
     * Decodes every result in a payload.
     *
     * @param payload the Arrow IPC bytes
     * @param context services for rebuilding handles, such as {@code DecodeContext.of(sandboxClient)}
     * @return one value per call, of the declared return type
     * @throws ArrowPayloadException when a value does not read as the return type
     */
    public List<Object> decodeResults(byte[] payload, DecodeContext context) {
        return results.decode(payload, context).stream().map(row -> row[0]).toList();
    }

    /**
     * Decodes the result of a single call.
     *
     * @param payload the Arrow IPC bytes, holding exactly one row
     * @param context services for rebuilding handles, such as {@code DecodeContext.of(sandboxClient)}
     * @return the value, of the declared return type
     * @throws ArrowPayloadException when the payload does not hold exactly one result
     */
    public Object decodeResult(byte[] payload, DecodeContext context) {
        List<Object[]> rows = results.decode(payload, context);
        if (rows.size() != 1) {
            throw new ArrowPayloadException("expected the result of one call of " + definition.name()
                    + " but the payload holds " + rows.size());
        }
        return rows.get(0)[0];
    }

    /** "2 arguments", or "1 to 2 arguments" when the last ones have defaults. */
    static String counts(int required, int all) {
        return required == all ? all + " argument" + (all == 1 ? "" : "s") : required + " to " + all + " arguments";
    }

    /** {@code [text, threshold=0.5]}: the parameters, each with its default. */
    private String parameterList() {
        return definition.parameters().stream()
                .map(p -> p.name() + p.defaultJson().map(json -> "=" + json).orElse(""))
                .toList()
                .toString();
    }
}
