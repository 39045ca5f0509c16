package ai.chalk.compute.server.worker;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * What the socket's scope remembers of the sandboxes deployed code made. It kept every one for as long as the server
 * ran: a function creating sandboxes that its developers' client terminated, in a loop, grew the server's heap without
 * bound. Ended sandboxes are now answered for a while (a function may still ask how its sandbox ended), then forgotten.
 * End to end, through the socket, in {@code WorkerSocketSecurityTest}.
 */
class WorkerScopeTest {

    @Test
    void endedSandboxesAreForgottenOldestFirstAndLiveOnesNever() {
        WorkerScope scope = new WorkerScope();
        scope.created("dev\u0000deployed functions\u0000", "live");
        // a sandbox of a millisecond's lifetime ends before its create is answered
        scope.sandboxEnded("early");
        scope.created("dev\u0000deployed functions\u0000", "early");
        assertThat(scope.createdBy("dev\u0000deployed functions\u0000", "early"))
                .isTrue();
        int ends = WorkerScope.KEPT_ENDED + 1000;
        for (int i = 0; i < ends; i++) {
            scope.created("dev\u0000deployed functions\u0000", "sb-" + i);
            scope.sandboxEnded("sb-" + i);
        }
        assertThat(scope.sandboxesKnown()).isEqualTo(WorkerScope.KEPT_ENDED + 1);
        assertThat(scope.createdBy("dev\u0000deployed functions\u0000", "live")).isTrue();
        assertThat(scope.createdBy("dev\u0000deployed functions\u0000", "sb-" + (ends - 1)))
                .as("the latest ended sandbox is still answered for")
                .isTrue();
        assertThat(scope.createdBy("dev\u0000deployed functions\u0000", "sb-0")).isFalse();
        assertThat(scope.createdBy("dev\u0000deployed functions\u0000", "early"))
                .isFalse();
        assertThat(scope.createdBy("dev\u0000sandbox:other\u0000", "live"))
                .as("another workload's key reaches none of them")
                .isFalse();
        scope.sandboxEnded("never-made-here"); // a sandbox made elsewhere ends: nothing to forget
        assertThat(scope.sandboxesKnown()).isEqualTo(WorkerScope.KEPT_ENDED + 1);
    }
}
