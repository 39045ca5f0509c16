package ai.chalk.compute.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.springframework.boot.DefaultApplicationArguments;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.support.GenericApplicationContext;

/** Which contexts a {@code SpringApplication} runs, and so will hear that the application is ready. */
class SpringApplicationRunTests {

    @Test
    void anApplicationsContextIsRunByASpringApplicationButNotAChildOrAPlainContext() {
        SpringApplication application = new SpringApplication(Empty.class);
        application.setWebApplicationType(WebApplicationType.NONE);
        try (ConfigurableApplicationContext context = application.run("--spring.main.banner-mode=off");
                GenericApplicationContext child = new GenericApplicationContext(context);
                GenericApplicationContext plain = new GenericApplicationContext()) {
            assertThat(SpringApplicationRun.runs(context.getBeanFactory())).isTrue();
            // a child sees its parent's beans, the application's arguments among them, but never hears its events
            assertThat(child.getBeanFactory().containsBean("springApplicationArguments"))
                    .isTrue();
            assertThat(SpringApplicationRun.runs(child.getBeanFactory())).isFalse();
            assertThat(SpringApplicationRun.runs(plain.getBeanFactory())).isFalse();
            plain.getBeanFactory().registerSingleton("springApplicationArguments", new DefaultApplicationArguments());
            assertThat(SpringApplicationRun.runs(plain.getBeanFactory())).isTrue();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class Empty {}
}
