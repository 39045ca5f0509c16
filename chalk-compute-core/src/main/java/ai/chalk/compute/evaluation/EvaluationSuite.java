package ai.chalk.compute.evaluation;

import java.time.Instant;

/**
 * A named group of evaluations, such as those a release must pass; give its {@link #id()} when creating an
 * evaluation, and list its evaluations with {@link EvaluationClient#list(String)}.
 * <pre>{@code
 * EvaluationSuite release = EvaluationSuite.create("Release");   // or client.evaluations().createSuite("Release")
 * }</pre>
 *
 * @param id        the suite's id
 * @param name      its name
 * @param createdAt when it was created
 */
public record EvaluationSuite(String id, String name, Instant createdAt) {

    /**
     * Creates a suite on the server this process's environment names ({@code CHALK_API_SERVER} and credentials, as
     * {@link ai.chalk.compute.sandbox.SandboxClient#fromEnv()} reads them), through a client shared by the process.
     *
     * @param name 1 to 255 characters
     * @return the suite
     */
    public static EvaluationSuite create(String name) {
        return EnvironmentClient.evaluations().createSuite(name);
    }

    static EvaluationSuite of(ai.chalk.compute.proto.evaluation.v1.EvaluationSuite s) {
        return new EvaluationSuite(
                s.getId(),
                s.getName(),
                Instant.ofEpochSecond(
                        s.getCreatedAt().getSeconds(), s.getCreatedAt().getNanos()));
    }
}
