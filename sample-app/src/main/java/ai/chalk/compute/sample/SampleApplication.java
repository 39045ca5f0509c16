package ai.chalk.compute.sample;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Runs the sandbox tour once and exits; with {@code --sample.keep-running=true} it stays up so the
 * actuator endpoints can be browsed.
 */
@SpringBootApplication
public class SampleApplication {

    public static void main(String[] args) {
        ConfigurableApplicationContext context = SpringApplication.run(SampleApplication.class, args);
        if (!context.getEnvironment().getProperty("sample.keep-running", Boolean.class, false)) {
            System.exit(SpringApplication.exit(context));
        }
    }
}
