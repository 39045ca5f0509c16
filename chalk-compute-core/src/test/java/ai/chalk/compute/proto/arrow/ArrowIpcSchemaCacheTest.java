package ai.chalk.compute.proto.arrow;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;

/**
 * Parsed schemas are kept by their message, for every reader of the JVM: a peer sending a large schema of its own with
 * each payload (deployed code answering calls) must not fill that cache.
 */
class ArrowIpcSchemaCacheTest {

    @Test
    void largeSchemasAreReadButNotKept() {
        try (BufferAllocator allocator = new RootAllocator()) {
            byte[] small = payload(allocator, "price");
            ArrowIpc.read(small, allocator, root -> {});
            long withSmall = ArrowIpc.cachedSchemaBytes();
            assertThat(withSmall).isPositive();
            for (int i = 0; i < 300; i++) {
                String name = i + "x".repeat(64 << 10); // a different 64 KiB field name each time
                AtomicInteger rows = new AtomicInteger();
                Schema schema =
                        ArrowIpc.read(payload(allocator, name), allocator, root -> rows.addAndGet(root.getRowCount()));
                assertThat(schema.getFields().get(0).getName()).isEqualTo(name);
                assertThat(rows).hasValue(1);
            }
            // 300 schemas of 64 KiB each would have been 19 MiB (a peer's 30 MiB ones, gigabytes)
            assertThat(ArrowIpc.cachedSchemaBytes()).isLessThanOrEqualTo(withSmall);
        }
    }

    private static byte[] payload(BufferAllocator allocator, String field) {
        try (IntVector v = new IntVector(field, allocator)) {
            v.allocateNew(1);
            v.set(0, 42);
            v.setValueCount(1);
            try (VectorSchemaRoot root = new VectorSchemaRoot(List.of(v.getField()), List.of(v), 1)) {
                return ArrowIpc.write(root);
            }
        }
    }
}
