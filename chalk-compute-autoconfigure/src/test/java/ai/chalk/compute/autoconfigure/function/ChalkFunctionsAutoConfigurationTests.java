package ai.chalk.compute.autoconfigure.function;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.autoconfigure.ChalkComputeProperties;
import ai.chalk.compute.autoconfigure.endpoint.ChalkFunctionsEndpoint;
import ai.chalk.compute.autoconfigure.endpoint.ChalkFunctionsEndpointAutoConfiguration;
import ai.chalk.compute.autoconfigure.function.FunctionDeploymentState.Status;
import ai.chalk.compute.autoconfigure.health.ChalkFunctionsHealthAutoConfiguration;
import ai.chalk.compute.autoconfigure.health.ChalkFunctionsHealthContributor;
import ai.chalk.compute.function.FunctionKind;
import ai.chalk.compute.function.FunctionRegistry;
import com.acme.functions.BadFns;
import com.acme.functions.Embedder;
import com.acme.functions.Fraud;
import com.acme.functions.Greeting;
import com.acme.functions.Plain;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.aop.framework.ProxyFactory;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.actuate.endpoint.CompositeHealthDescriptor;
import org.springframework.boot.health.actuate.endpoint.HealthEndpoint;
import org.springframework.boot.health.autoconfigure.actuate.endpoint.HealthEndpointAutoConfiguration;
import org.springframework.boot.health.autoconfigure.contributor.HealthContributorAutoConfiguration;
import org.springframework.boot.health.autoconfigure.registry.HealthContributorRegistryAutoConfiguration;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthContributors;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** Discovery of function beans, their health and the {@code chalkfunctions} endpoint, on real contexts. */
@ExtendWith(OutputCaptureExtension.class)
class ChalkFunctionsAutoConfigurationTests {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    ChalkFunctionsAutoConfiguration.class,
                    ChalkFunctionsHealthAutoConfiguration.class,
                    ChalkFunctionsEndpointAutoConfiguration.class))
            .withPropertyValues("management.endpoints.web.exposure.include=health,chalkfunctions");

    @Test
    void discoversFunctionsScorersAndClassesOfBeansAndCallsThemOnTheBeans() {
        runner.withUserConfiguration(GoodBeans.class).run(context -> {
            ChalkFunctions functions = context.getBean(ChalkFunctions.class);
            assertThat(functions.functions())
                    .extracting(FunctionDeploymentState::name)
                    .containsExactlyInAnyOrder("greet", "fraudScore", "exact", "Embedder.embed");
            assertThat(functions.functions())
                    .allSatisfy(f -> assertThat(f.status()).isEqualTo(Status.DISCOVERED));
            FunctionDeploymentState exact = functions.function("exact").orElseThrow();
            assertThat(exact.kind()).isEqualTo(FunctionKind.SCORER);
            assertThat(exact.beanName()).isEqualTo("fraud");
            assertThat(exact.location()).matches("com\\.acme\\.functions\\.Fraud\\.exact\\(Fraud\\.java:\\d+\\)");
            // the function runs on the bean Spring made, with its injected dependency
            FunctionRegistry registry = context.getBean(FunctionRegistry.class);
            assertThat(registry.get("greet").invoke("Ada")).isEqualTo("Hello, Ada");
            assertThat(registry.get("fraudScore").definition().inputSchema().getFields())
                    .extracting(f -> f.getName())
                    .containsExactly("text", "limit");
            assertThat(registry.get("Embedder.embed").invoke("abc")).isEqualTo(List.of(3.0f));
        });
    }

    @Test
    void aClassProxiedBeanIsReadAsItsOwnClassAndCalledThroughTheProxy() {
        runner.withUserConfiguration(ProxiedBeans.class).run(context -> {
            Object bean = context.getBean("fraud");
            assertThat(bean.getClass().getName()).contains("$$");
            ChalkFunctions functions = context.getBean(ChalkFunctions.class);
            assertThat(functions.function("greet"))
                    .get()
                    .extracting(FunctionDeploymentState::location)
                    .asString()
                    .startsWith("com.acme.functions.Fraud.greet(Fraud.java:");
            assertThat(functions.registry().get("greet").invoke("Bob")).isEqualTo("Hi, Bob");
        });
    }

    @Test
    void aBadSignatureFailsThatFunctionAloneWithItsOwnMessageWithoutStoppingTheApplication(CapturedOutput output) {
        runner.withUserConfiguration(GoodBeans.class, BadBeans.class).run(context -> {
            assertThat(context).hasNotFailed();
            ChalkFunctions functions = context.getBean(ChalkFunctions.class);
            FunctionDeploymentState bad = functions.function("bad").orElseThrow();
            assertThat(bad.status()).isEqualTo(Status.FAILED);
            assertThat(bad.error())
                    .startsWith("com.acme.functions.BadFns.bad(Object x): parameter 'x' has type Object");
            // its neighbour on the bean fails for its own reason, not for bad's
            FunctionDeploymentState alsoBad = functions.function("alsoBad").orElseThrow();
            assertThat(alsoBad.status()).isEqualTo(Status.FAILED);
            assertThat(alsoBad.error())
                    .startsWith("com.acme.functions.BadFns.alsoBad(String name): return type Thread")
                    .doesNotContain("bad(Object x)");
            assertThat(alsoBad.location()).contains("BadFns.alsoBad(");
            // and the valid one on the same bean is registered and goes on to deployment
            assertThat(functions.function("fine"))
                    .get()
                    .extracting(FunctionDeploymentState::status)
                    .isEqualTo(Status.DISCOVERED);
            assertThat(functions.registry().get("fine").invoke("ok")).isEqualTo("ok");
            assertThat(functions.function("greet"))
                    .get()
                    .extracting(FunctionDeploymentState::status)
                    .isEqualTo(Status.DISCOVERED);
            assertThat(functions.failures())
                    .extracting(FunctionDeploymentState::name)
                    .containsExactlyInAnyOrder("bad", "alsoBad");

            HealthContributors health =
                    context.getBean("chalkFunctionsHealthContributor", ChalkFunctionsHealthContributor.class);
            Health badHealth = ((HealthIndicator) health.getContributor("bad")).health();
            assertThat(badHealth.getStatus()).isEqualTo(org.springframework.boot.health.contributor.Status.DOWN);
            assertThat(badHealth.getDetails())
                    .containsEntry("error", bad.error())
                    .containsEntry("status", "FAILED")
                    .containsEntry("location", bad.location());
            Health greetHealth = ((HealthIndicator) health.getContributor("greet")).health();
            assertThat(greetHealth.getStatus()).isEqualTo(org.springframework.boot.health.contributor.Status.UNKNOWN);
            assertThat(health.stream())
                    .extracting(HealthContributors.Entry::name)
                    .containsExactlyInAnyOrder(
                            "greet", "fraudScore", "exact", "Embedder.embed", "bad", "alsoBad", "fine");
            assertThat(health.getContributor("nothing")).isNull();
            assertThat(((HealthIndicator) health.getContributor("fine"))
                            .health()
                            .getStatus())
                    .isEqualTo(org.springframework.boot.health.contributor.Status.UNKNOWN);
        });
        // one ERROR line per bad function pointing at its method as a stack frame reads, no frames of the starter or
        // SDK
        assertThat(output)
                .contains("ERROR")
                .contains("Chalk function bad of bean 'badFns' cannot be deployed: "
                        + "com.acme.functions.BadFns.bad(Object x): parameter 'x' has type Object")
                .containsPattern("\tat com\\.acme\\.functions\\.BadFns\\.bad\\(BadFns\\.java:\\d+\\)")
                .contains("Chalk function alsoBad of bean 'badFns' cannot be deployed: "
                        + "com.acme.functions.BadFns.alsoBad(String name)")
                .containsPattern("\tat com\\.acme\\.functions\\.BadFns\\.alsoBad\\(BadFns\\.java:\\d+\\)")
                .doesNotContain("Chalk function fine")
                .doesNotContain("at ai.chalk.compute");
    }

    @Test
    void theHealthEndpointShowsChalkFunctionsWithOneMemberPerFunction() {
        runner.withConfiguration(AutoConfigurations.of(
                        HealthContributorAutoConfiguration.class,
                        HealthContributorRegistryAutoConfiguration.class,
                        HealthEndpointAutoConfiguration.class))
                .withUserConfiguration(GoodBeans.class, BadBeans.class)
                .withPropertyValues(
                        "management.endpoint.health.show-details=always",
                        "management.endpoint.health.show-components=always")
                .run(context -> {
                    HealthEndpoint endpoint = context.getBean(HealthEndpoint.class);
                    CompositeHealthDescriptor all =
                            (CompositeHealthDescriptor) endpoint.healthForPath("chalkFunctions");
                    assertThat(all.getStatus()).isEqualTo(org.springframework.boot.health.contributor.Status.DOWN);
                    assertThat(all.getComponents())
                            .containsOnlyKeys(
                                    "greet", "fraudScore", "exact", "Embedder.embed", "bad", "alsoBad", "fine");
                    assertThat(endpoint.healthForPath("chalkFunctions", "greet").getStatus())
                            .isEqualTo(org.springframework.boot.health.contributor.Status.UNKNOWN);
                    assertThat(endpoint.healthForPath("chalkFunctions", "bad").getStatus())
                            .isEqualTo(org.springframework.boot.health.contributor.Status.DOWN);
                });
    }

    @Test
    void theEndpointListsFunctionsAndShowsOneByName() {
        runner.withUserConfiguration(GoodBeans.class, BadBeans.class).run(context -> {
            ChalkFunctionsEndpoint endpoint = context.getBean(ChalkFunctionsEndpoint.class);
            assertThat(endpoint.functions().functions()).hasSize(7);
            ChalkFunctionsEndpoint.FunctionDescriptor bad = endpoint.function("bad");
            assertThat(bad.status()).isEqualTo("FAILED");
            assertThat(bad.bean()).isEqualTo("badFns");
            assertThat(bad.kind()).isEqualTo("FUNCTION");
            assertThat(bad.error()).contains("has type Object");
            ChalkFunctionsEndpoint.FunctionDescriptor greet = endpoint.function("greet");
            assertThat(greet.status()).isEqualTo("DISCOVERED");
            assertThat(greet.error()).isNull();
            assertThat(endpoint.function("nothing")).isNull();
        });
    }

    @Test
    void anApplicationWithoutFunctionBeansHasAnEmptyList() {
        runner.withUserConfiguration(NoFunctions.class).run(context -> {
            assertThat(context.getBean(ChalkFunctions.class).functions()).isEmpty();
            assertThat(context.getBean(ChalkFunctionsHealthContributor.class).stream())
                    .isEmpty();
        });
    }

    @Test
    void switchedOffByProperty() {
        runner.withUserConfiguration(GoodBeans.class)
                .withPropertyValues("chalk.compute.functions.enabled=false")
                .run(context -> assertThat(context)
                        .doesNotHaveBean(ChalkFunctions.class)
                        .doesNotHaveBean(FunctionRegistry.class)
                        .doesNotHaveBean(ChalkFunctionsHealthContributor.class)
                        .doesNotHaveBean(ChalkFunctionsEndpoint.class));
    }

    @Test
    void theHealthContributorCanBeSwitchedOff() {
        runner.withUserConfiguration(GoodBeans.class)
                .withPropertyValues("management.health.chalkfunctions.enabled=false")
                .run(context -> assertThat(context)
                        .hasSingleBean(ChalkFunctions.class)
                        .doesNotHaveBean(ChalkFunctionsHealthContributor.class));
    }

    @Test
    void propertiesBind() {
        runner.withPropertyValues("chalk.compute.functions.enabled=true", "chalk.compute.functions.worker=true")
                .run(context -> {
                    ChalkComputeProperties.Functions functions =
                            context.getBean(ChalkComputeProperties.class).getFunctions();
                    assertThat(functions.isEnabled()).isTrue();
                    assertThat(functions.isWorker()).isTrue();
                });
        runner.run(context -> assertThat(context.getBean(ChalkComputeProperties.class)
                        .getFunctions()
                        .isWorker())
                .isFalse());
    }

    @Test
    void anApplicationsOwnRegistryIsUsed() {
        runner.withUserConfiguration(GoodBeans.class, OwnRegistry.class).run(context -> {
            assertThat(context).hasSingleBean(FunctionRegistry.class);
            FunctionRegistry own = context.getBean("ownRegistry", FunctionRegistry.class);
            assertThat(context.getBean(ChalkFunctions.class).registry()).isSameAs(own);
            assertThat(own.find("greet")).isPresent();
        });
    }

    @Configuration(proxyBeanMethods = false)
    static class GoodBeans {

        @Bean
        Greeting greeting() {
            return new Greeting("Hello");
        }

        @Bean
        Fraud fraud(Greeting greeting) {
            return new Fraud(greeting);
        }

        @Bean
        Embedder embedder() {
            return new Embedder();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class ProxiedBeans {

        @Bean
        Fraud fraud() {
            // a class-based proxy, as @Transactional or @Async beans are
            ProxyFactory factory = new ProxyFactory(new Fraud(new Greeting("Hi")));
            factory.setProxyTargetClass(true);
            return (Fraud) factory.getProxy();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class BadBeans {

        @Bean
        BadFns badFns() {
            return new BadFns();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class NoFunctions {

        @Bean
        Plain plain() {
            return new Plain();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnRegistry {

        @Bean
        FunctionRegistry ownRegistry() {
            return new FunctionRegistry();
        }
    }
}
