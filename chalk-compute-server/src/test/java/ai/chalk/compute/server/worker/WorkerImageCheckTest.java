package ai.chalk.compute.server.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.runtime.docker.DockerTesting;
import ai.chalk.compute.server.runtime.local.LocalIsolation;
import ai.chalk.compute.server.runtime.local.LocalRuntime;
import ai.chalk.compute.server.threads.EnvironmentShares;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reading the feature release from what {@code java -version} prints, as JREs of several vendors print it; and where the
 * check's sandbox counts: a real one of the JRE test image on the local runtime.
 */
class WorkerImageCheckTest {

    @Test
    void aCheckTakesAPlaceOfTheDeployingEnvironmentsAndOneThatPassedNeedsNone(@TempDir Path temp) throws Exception {
        String jre = DockerTesting.jreImage(); // built the way CI builds it when missing
        EnvironmentShares places = new EnvironmentShares("sandboxes", 2, 1);
        EnvironmentShares.Refusals refusals = (refusal, counts, environment) -> "no room for " + environment;
        ExecutorService executor = Executors.newCachedThreadPool();
        try (LocalRuntime runtime =
                new LocalRuntime(Files.createDirectories(temp.resolve("state")), LocalIsolation.AUTO)) {
            WorkerImageCheck check = new WorkerImageCheck(
                    runtime, environment -> places.take(environment, refusals), WorkerJava.image(jre), executor);
            try (EnvironmentShares.Place dev = places.take("dev", refusals)) {
                assertThatThrownBy(() -> check.problem("dev"))
                        .isInstanceOf(ComputeException.class)
                        .hasMessage("no room for dev");
                // another environment's deployment checks in a place of its own, given back once the check is done
                assertThat(check.problem("prod")).isEmpty();
                assertThat(places.held("prod")).isZero();
                // the image passed a moment ago: dev, at its share, needs no place for it now
                assertThat(check.problem("dev")).isEmpty();
                assertThat(places.held()).isEqualTo(1);
            }
        } finally {
            executor.shutdownNow();
        }
    }

    @Test
    void featureReleaseOfJavaVersionOutput() {
        assertThat(WorkerImageCheck.feature("openjdk version \"17.0.19\" 2026-04-21\nOpenJDK Runtime Environment"))
                .isEqualTo(17);
        assertThat(WorkerImageCheck.feature("openjdk version \"21\" 2023-09-19"))
                .isEqualTo(21);
        assertThat(WorkerImageCheck.feature("openjdk version \"25-ea\" 2025-09-16"))
                .isEqualTo(25);
        assertThat(WorkerImageCheck.feature("java version \"1.8.0_392\"\nJava(TM) SE Runtime Environment"))
                .isEqualTo(8);
        assertThat(WorkerImageCheck.feature("openjdk version \"11.0.21\" 2023-10-17 LTS"))
                .isEqualTo(11);
        assertThat(WorkerImageCheck.feature("sh: java: not found")).isEqualTo(-1);
    }
}
