package ai.chalk.compute.sample;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/** Runs the sandbox tour once and exits. */
@SpringBootApplication
public class SampleApplication {

    public static void main(String[] args) {
        System.exit(SpringApplication.exit(SpringApplication.run(SampleApplication.class, args)));
    }
}
