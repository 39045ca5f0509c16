package ai.chalk.compute.sample.startup;

import ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServer;
import ai.chalk.compute.sandbox.SandboxClient;
import java.lang.management.ManagementFactory;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * An application with nothing but auto-configuration, started once in its own JVM by
 * {@link StarterStartupBenchmark}: {@code with} the Chalk Compute starter active (the embedded server
 * starts and a {@code SandboxClient} is ready), {@code remote} (the starter active with a remote target,
 * so no embedded server), or {@code without} it (its auto-configurations and Spring gRPC's client ones,
 * which only the starter brings, excluded). Prints one line:
 * {@code STARTUP <variant> <ms in SpringApplication.run> <ms since the JVM started>}.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class StartupProbe {

    /** The auto-configurations the starter adds to an application. */
    static final String STARTER_AUTO_CONFIGURATIONS = String.join(
            ",",
            "ai.chalk.compute.autoconfigure.ChalkComputeAutoConfiguration",
            "ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServerAutoConfiguration",
            "ai.chalk.compute.autoconfigure.auth.ChalkComputeAuthAutoConfiguration",
            "ai.chalk.compute.autoconfigure.progress.ChalkComputeProgressAutoConfiguration",
            "ai.chalk.compute.autoconfigure.tracing.ChalkComputeObservationAutoConfiguration",
            "ai.chalk.compute.autoconfigure.health.ChalkComputeHealthAutoConfiguration",
            "ai.chalk.compute.autoconfigure.endpoint.ChalkComputeEndpointAutoConfiguration",
            "org.springframework.boot.grpc.client.autoconfigure.CompositeChannelFactoryAutoConfiguration",
            "org.springframework.boot.grpc.client.autoconfigure.GrpcClientAutoConfiguration",
            "org.springframework.boot.grpc.client.autoconfigure.GrpcClientObservationAutoConfiguration");

    public static void main(String[] args) {
        String variant = args.length > 0 ? args[0] : "with";
        boolean with = !variant.equals("without");
        boolean embeddedExpected = variant.equals("with");
        SpringApplication application = new SpringApplication(StartupProbe.class);
        application.setWebApplicationType(WebApplicationType.NONE);
        application.setLogStartupInfo(false);
        String[] properties = with
                ? new String[] {
                    "--spring.main.banner-mode=off",
                    "--logging.level.root=WARN",
                    embeddedExpected
                            ? "--chalk.compute.embedded.enabled=auto"
                            : "--chalk.compute.target=localhost:50051"
                }
                : new String[] {
                    "--spring.main.banner-mode=off",
                    "--logging.level.root=WARN",
                    "--spring.autoconfigure.exclude=" + STARTER_AUTO_CONFIGURATIONS
                };
        String[] all = java.util.stream.Stream.concat(
                        java.util.Arrays.stream(properties),
                        java.util.Arrays.stream(args).skip(1))
                .toArray(String[]::new);
        long started = System.nanoTime();
        ConfigurableApplicationContext context = application.run(all);
        long runMillis = (System.nanoTime() - started) / 1_000_000;
        long uptimeMillis = ManagementFactory.getRuntimeMXBean().getUptime();
        boolean hasClient = context.getBeanProvider(SandboxClient.class).getIfAvailable() != null;
        EmbeddedComputeServer embedded =
                context.getBeanProvider(EmbeddedComputeServer.class).getIfAvailable();
        boolean serving = embedded != null && embedded.isRunning();
        if (hasClient != with || serving != embeddedExpected) {
            throw new IllegalStateException("variant " + variant + " but SandboxClient bean present: " + hasClient
                    + ", embedded server running: " + serving);
        }
        System.out.println("STARTUP " + variant + " " + runMillis + " " + uptimeMillis);
        System.exit(SpringApplication.exit(context));
    }
}
