package ai.chalk.compute.function.remote;

import ai.chalk.compute.function.FunctionDefinition;
import ai.chalk.compute.function.FunctionPayloads;
import ai.chalk.compute.function.arrow.ArrowPayloadException;
import ai.chalk.compute.function.arrow.ArrowTypeMapping;
import ai.chalk.compute.function.arrow.DecodeContext;
import ai.chalk.compute.function.arrow.GenericJavaTypes;
import ai.chalk.compute.function.arrow.RowCodec;
import ai.chalk.compute.function.arrow.SchemaProtos;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersion;
import java.util.List;
import org.apache.arrow.vector.types.pojo.Schema;

/** How a remote function's arguments and results are written and read: with its local definition, or generically. */
sealed interface Codec {

    byte[] encode(List<Object[]> calls);

    List<Object> decode(byte[] payload, DecodeContext context);

    /** With the local definition: results are the declared Java type. */
    record Typed(FunctionPayloads payloads) implements Codec {
        Typed(FunctionDefinition definition) {
            this(FunctionPayloads.of(definition));
        }

        @Override
        public byte[] encode(List<Object[]> calls) {
            return payloads.encodeBatch(calls);
        }

        @Override
        public List<Object> decode(byte[] payload, DecodeContext context) {
            return payloads.decodeResults(payload, context);
        }
    }

    /** From the catalog's schemas, with {@link GenericJavaTypes}. */
    record Generic(RowCodec arguments, RowCodec results, int parameters) implements Codec {

        static Generic of(ExternalFunctionVersion version) {
            Schema input = SchemaProtos.fromProto(version.getInputArrowSchema());
            Schema output = SchemaProtos.fromProto(version.getOutputArrowSchema());
            ArrowTypeMapping mapping = ArrowTypeMapping.standard();
            return new Generic(
                    RowCodec.of(
                            input,
                            input.getFields().stream()
                                    .map(f -> GenericJavaTypes.of(f, mapping))
                                    .toList(),
                            mapping),
                    RowCodec.of(
                            output,
                            output.getFields().stream()
                                    .map(f -> GenericJavaTypes.of(f, mapping))
                                    .toList(),
                            mapping),
                    input.getFields().size());
        }

        @Override
        public byte[] encode(List<Object[]> calls) {
            int required = arguments.requiredColumns();
            List<Object[]> rows = new java.util.ArrayList<>(calls.size());
            for (int row = 0; row < calls.size(); row++) {
                Object[] call = calls.get(row);
                int given = call == null ? 0 : call.length;
                if (call == null || given < required || given > parameters) {
                    throw new ArrowPayloadException("row " + row + ": the function takes "
                            + (required == parameters
                                    ? parameters + " argument" + (parameters == 1 ? "" : "s")
                                    : required + " to " + parameters + " arguments")
                            + " " + parameterList() + " but " + given + " were given");
                }
                // the catalog's schema carries each parameter's default: those left out at the end take theirs
                rows.add(arguments.withDefaults(call));
            }
            return arguments.encode(rows);
        }

        /** {@code [text, threshold=0.5]}: the catalog's parameters, each with its default. */
        private String parameterList() {
            List<String> names = new java.util.ArrayList<>();
            List<org.apache.arrow.vector.types.pojo.Field> fields =
                    arguments.schema().getFields();
            for (int i = 0; i < fields.size(); i++) {
                names.add(fields.get(i).getName()
                        + arguments.defaultJson(i).map(json -> "=" + json).orElse(""));
            }
            return names.toString();
        }

        @Override
        public List<Object> decode(byte[] payload, DecodeContext context) {
            return results.decode(payload, context).stream().map(row -> row[0]).toList();
        }
    }
}
