package ai.chalk.compute.server.function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.externalfunctioncatalog.v1.FunctionConfig;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** A deployment's options as the server checks them. */
class FunctionOptionsTest {

    private static FunctionConfig listing(int functions) {
        return FunctionConfig.newBuilder()
                .putOptions("chalk_compute.code", "sha256:" + "0".repeat(64))
                .putOptions(
                        "chalk_compute.functions",
                        IntStream.range(0, functions)
                                .mapToObj(i -> "f" + i + "=t.W#f")
                                .collect(Collectors.joining(",")))
                .build();
    }

    @Test
    void aDeploymentServesABoundedNumberOfFunctions() {
        // each untagged output line of a replica is kept for every function it serves: 15,000 names made every line
        // 15,000 insertions
        assertThat(FunctionOptions.of(listing(FunctionOptions.MAX_FUNCTIONS))
                        .requireNew()
                        .functions())
                .hasSize(FunctionOptions.MAX_FUNCTIONS);
        // a version deployed before the bound still reads
        FunctionOptions many = FunctionOptions.of(listing(15_000));
        assertThat(many.functions()).hasSize(15_000);
        assertThatThrownBy(many::requireNew).isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
            assertThat(e.getStatus().getDescription()).contains("lists 15000 functions", "at most 256");
        });
    }
}
