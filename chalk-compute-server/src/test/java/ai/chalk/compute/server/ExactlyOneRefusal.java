package ai.chalk.compute.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import java.util.List;

/** For the tests that fill a limit one past it: of the calls' statuses, exactly one is the refusal. */
public final class ExactlyOneRefusal {

    private ExactlyOneRefusal() {}

    /** Asserts that exactly one of {@code statuses} is not OK, and that it is RESOURCE_EXHAUSTED saying {@code why}. */
    public static void among(List<Status> statuses, String why) {
        List<Status> refused = statuses.stream().filter(s -> !s.isOk()).toList();
        assertThat(refused).hasSize(1);
        assertThat(refused.get(0).getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        assertThat(refused.get(0).getDescription()).isEqualTo(why);
    }
}
