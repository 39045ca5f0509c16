package ai.chalk.compute.function.deploy;

import ai.chalk.compute.sandbox.SandboxClient;
import com.acme.SecretReader;
import com.acme.Tally;

/**
 * A plain Java program that only deploys, run as its own process by {@link FunctionsOutsideSpringTest}: its
 * {@code main} returns while the deployments run, one of which fails (its secret does not exist).
 */
public final class DeployAtExitMain {

    private DeployAtExitMain() {}

    /**
     * Deploys {@link Tally} and {@link SecretReader} to the server at {@code args[0]} and returns.
     *
     * @param args the server's target
     */
    public static void main(String[] args) {
        SandboxClient client = SandboxClient.connect(args[0]);
        client.functions().deploy(Tally.class, SecretReader.class);
    }
}
