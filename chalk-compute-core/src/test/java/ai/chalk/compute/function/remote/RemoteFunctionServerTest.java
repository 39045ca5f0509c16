package ai.chalk.compute.function.remote;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.error.RemoteExecutionException;
import ai.chalk.compute.function.arrow.ArrowPayloadException;
import ai.chalk.compute.function.catalog.FunctionVersion;
import ai.chalk.compute.function.deploy.FunctionDeployer;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.grpc.Status;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * The client against the real server over TCP: deploy, call (sync, batched, async), a remote failure with its
 * traceback, and a second deploy of unchanged code that reuses the version with no upload.
 */
class RemoteFunctionServerTest {

    @TempDir
    Path dataDir;

    @Test
    void deployCallAndReuse() throws Exception {
        Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        ListAppender<ILoggingEvent> logs = new ListAppender<>();
        logs.start();
        root.addAppender(logs);
        try (DeployedTally tally = new DeployedTally(dataDir)) {
            FunctionDeployer.Deployment deployment = tally.ensure("sum");
            assertThat(deployment.reused())
                    .as("a new function gets a new version")
                    .isFalse();
            FunctionVersion first = deployment.version();
            assertThat(first.version()).isEqualTo(1);
            int uploadsAfterFirst = tally.uploads.get();
            assertThat(uploadsAfterFirst).as("the class path went up once").isPositive();

            RemoteFunction sum = tally.remote("sum");
            assertThat(sum.call(2L, 40L)).isEqualTo(42L);
            assertThat(sum.callBatch(List.of(new Object[] {1L, 1L}, new Object[] {5L, 7L}, new Object[] {-3L, 3L})))
                    .containsExactly(2L, 12L, 0L);
            assertThat(sum.callAsync(20L, 22L).get(60, TimeUnit.SECONDS)).isEqualTo(42L);

            FunctionDeployer.Deployment redeployed = tally.ensure("sum");
            assertThat(redeployed.version().id())
                    .as("unchanged code, image and configuration reuse the version")
                    .isEqualTo(first.id());
            assertThat(redeployed.reused()).as("and say so").isTrue();
            assertThat(tally.uploads.get()).as("nothing uploaded on reuse").isEqualTo(uploadsAfterFirst);

            tally.deploy("explode");
            assertThatThrownBy(() -> tally.remote("explode").call("no ledger"))
                    .isInstanceOfSatisfying(RemoteExecutionException.class, e -> {
                        assertThat(e.exceptionType()).isEqualTo(IllegalArgumentException.class.getName());
                        assertThat(e.remoteMessage()).isEqualTo("cannot tally: no ledger");
                        assertThat(e.remoteTraceback()).contains("com.acme.Tally.explode");
                        assertThat(e.callId()).isPresent();
                        // the caller has the source (the module's src/test/java): the failing line, numbered
                        assertThat(e.getMessage())
                                .containsPattern(
                                        "> +17 \\| +throw new IllegalArgumentException\\(\"cannot tally: \" \\+ why\\);")
                                .contains("16 |     public static String explode(String why) {");
                    });
            assertThat(sum.call(1L, 2L))
                    .as("the server and the other function keep serving")
                    .isEqualTo(3L);
        } finally {
            root.detachAppender(logs);
        }
        // the server's connections to its workers are unix sockets, which have no TCP keep-alive to set
        assertThat(logs.list)
                .extracting(ILoggingEvent::getFormattedMessage)
                .noneMatch(m -> m.contains("Unknown channel option"));
    }

    @Test
    void aCallByNameLeavesOutTrailingArgumentsThatHaveDefaults() throws Exception {
        try (DeployedTally tally = new DeployedTally(dataDir)) {
            tally.deploy("label");
            // this caller knows the function by name only: the defaults come from the catalog's schema
            RemoteFunction byName = RemoteFunction.fromName(tally.client, "label");
            assertThat(byName.call("ab")).isEqualTo("ab-ab");
            assertThat(byName.call("ab", "+")).isEqualTo("ab+ab");
            assertThat(byName.call("ab", "+", 3)).isEqualTo("ab+ab+ab");
            assertThat(byName.callBatch(List.of(new Object[] {"x"}, new Object[] {"y", "/", 1})))
                    .containsExactly("x-x", "y");
            assertThat(byName.callAsync("z").get(60, TimeUnit.SECONDS)).isEqualTo("z-z");
            // an argument and a result larger than the worker's network buffer-pool chunks (1 MiB) go through whole
            String large = "abc".repeat(1 << 20);
            assertThat(byName.call(large, "", 2)).isEqualTo(large + large);
            // past the 33 MiB a reply may take: refused with both sizes, and the function keeps serving
            assertThatThrownBy(() -> byName.call(large, "", 12))
                    .isInstanceOfSatisfying(
                            ChalkComputeException.class,
                            e -> assertThat(e.statusCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED))
                    .hasMessageContaining("exceeds maximum size " + (33 << 20));
            assertThat(byName.call("ab")).isEqualTo("ab-ab");
            assertThatThrownBy(byName::call)
                    .isInstanceOf(ArrowPayloadException.class)
                    .hasMessage("row 0: the function takes 1 to 3 arguments [name, separator=\"-\", copies=2] but 0"
                            + " were given");
            assertThatThrownBy(() -> byName.call("a", "b", 1, 2))
                    .hasMessageContaining("takes 1 to 3 arguments")
                    .hasMessageEndingWith("but 4 were given");
            // with the local definition too
            assertThat(tally.remote("label").call("ab", "")).isEqualTo("abab");
            assertThatThrownBy(() -> tally.remote("label").call())
                    .hasMessage(
                            "row 0: label takes 1 to 3 arguments [name, separator=\"-\", copies=2] but 0 were given");
        }
    }
}
