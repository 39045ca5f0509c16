package ai.chalk.compute.autoconfigure.function;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.StandardEnvironment;

/** A deploy-only run is no web application, whatever the application would otherwise be. */
class DeployOnlyEnvironmentPostProcessorTests {

    @Test
    void aDeployOnlyRunOfAWebApplicationStartsNoWebServer() {
        SpringApplication application = new SpringApplication(Plain.class);
        application.setWebApplicationType(WebApplicationType.SERVLET); // as a web application on its class path is
        try (ConfigurableApplicationContext context =
                application.run("--chalk.compute.functions.deploy-only=true", "--spring.main.banner-mode=off")) {
            assertThat(context.getEnvironment().getProperty("spring.main.web-application-type"))
                    .isEqualTo("none");
            assertThat(context.getClass().getName()).doesNotContain("Web").doesNotContain("Servlet");
        }
    }

    @Test
    void otherRunsAreLeftAlone() {
        StandardEnvironment environment = new StandardEnvironment();
        new DeployOnlyEnvironmentPostProcessor().postProcessEnvironment(environment, new SpringApplication());
        assertThat(environment.getPropertySources().contains(DeployOnlyEnvironmentPostProcessor.SOURCE_NAME))
                .isFalse();
        assertThat(environment.getProperty("spring.main.web-application-type")).isNull();
    }

    @Configuration(proxyBeanMethods = false)
    static class Plain {}
}
