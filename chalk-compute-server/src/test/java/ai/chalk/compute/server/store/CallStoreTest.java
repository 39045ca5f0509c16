package ai.chalk.compute.server.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Queued calls' rows in a real H2 store: what a finished call keeps, and for how long nobody reads it. */
class CallStoreTest {

    @TempDir
    Path dir;

    @Test
    void unreadResultsAreForgottenAfterTheirTimeAndCallsNotFinishedStay() {
        try (Database db = Database.open(dir)) {
            CallStore calls = new CallStore(db);
            calls.insert("dev", "call-done", "f", "fnv-1", "echo", new byte[1 << 20]);
            calls.finish(
                    "call-done",
                    CallStore.State.COMPLETED,
                    Optional.of("answer".getBytes(StandardCharsets.UTF_8)),
                    Optional.empty());
            calls.insert("dev", "call-waiting", "f", "fnv-1", "echo", new byte[16]);
            calls.insert("dev", "call-running", "f", "fnv-1", "echo", new byte[16]);
            assertThat(calls.start("call-running")).isTrue();

            CallStore.CallRecord done = calls.find("call-done").orElseThrow();
            assertThat(done.args())
                    .as("a finished call's arguments, of no more use")
                    .isEmpty();
            assertThat(done.result())
                    .hasValueSatisfying(r ->
                            assertThat(new String(r, StandardCharsets.UTF_8)).isEqualTo("answer"));

            assertThat(calls.unreadBytes("dev"))
                    .as("the result, not the arguments")
                    .isEqualTo("answer".length());
            assertThat(calls.unreadBytes("prod")).isZero();
            assertThat(calls.forgetFinishedBefore(Instant.now().minus(CallStore.KEPT_UNREAD)))
                    .as("a result finished just now waits for its poll")
                    .isZero();
            assertThat(calls.forgetFinishedBefore(Instant.now().plusSeconds(1))).isEqualTo(1);
            assertThat(calls.find("call-done")).isEmpty();
            assertThat(calls.find("call-waiting")).isPresent();
            assertThat(calls.find("call-running")).isPresent();
            assertThat(calls.unreadBytes("dev")).isZero();
        }
    }
}
