package ai.chalk.compute.function.arrow;

import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;

/**
 * Carries a started {@link Sandbox} as its id only, exactly as Chalk's Python SDK does: a struct
 * {@code {sandbox_id: large_utf8}} marked {@code chalk.python.type=chalkcompute.Sandbox}. No
 * credentials, environment or specification travel; the receiver rebuilds a handle with its own
 * {@link SandboxClient} and identity.
 */
final class SandboxArrowType implements CustomArrowType<Sandbox, SandboxArrowType.StoredSandbox> {

    /** The wire form; the component is named as on the wire, so it reads the same in Python. */
    record StoredSandbox(String sandbox_id) {}

    @Override
    public Class<Sandbox> javaType() {
        return Sandbox.class;
    }

    @Override
    public Class<StoredSandbox> storageType() {
        return StoredSandbox.class;
    }

    @Override
    public StoredSandbox toStorage(Sandbox sandbox) {
        return new StoredSandbox(sandbox.id());
    }

    @Override
    public Sandbox fromStorage(StoredSandbox stored, DecodeContext context) {
        if (stored.sandbox_id() == null || stored.sandbox_id().isBlank()) {
            throw new IllegalArgumentException("the sandbox handle has no sandbox_id");
        }
        return context.require(SandboxClient.class, "rebuild a Sandbox handle").attach(stored.sandbox_id());
    }

    @Override
    public Map<String, String> metadata() {
        return Map.of(ChalkMetadata.PYTHON_TYPE, "chalkcompute.Sandbox");
    }

    @Override
    public Field storageField(Field standard) {
        return new Field(
                standard.getName(),
                standard.getFieldType(),
                List.of(new Field("sandbox_id", FieldType.notNullable(ArrowType.LargeUtf8.INSTANCE), null)));
    }
}
