package ai.chalk.compute.server.worker;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Reading the feature release from what {@code java -version} prints, as JREs of several vendors print it. */
class WorkerImageCheckTest {

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
