package ai.chalk.compute.autoconfigure;

import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.HierarchicalBeanFactory;

/**
 * Tells whether a {@code SpringApplication} runs an application context, and so will publish
 * {@code ApplicationStartedEvent} and {@code ApplicationReadyEvent}. The starter's background work (the embedded
 * server's start, reading the functions' signatures, deploying them) waits for those events so that it does not share
 * the processor with the application's own startup; a context made otherwise (a test's
 * {@code ApplicationContextRunner}) never publishes them, so there the work begins when the context is refreshed.
 */
public final class SpringApplicationRun {

    private SpringApplicationRun() {}

    /**
     * Whether a {@code SpringApplication} runs the context of this bean factory: it registers the application's
     * arguments as a bean, which a context made otherwise lacks. The factory's own beans only: a child context of an
     * application's (which no {@code SpringApplication} runs) sees its parent's beans, but never hears its events.
     *
     * @param factory the context's bean factory
     * @return {@code true} when its context is run by a {@code SpringApplication}
     */
    public static boolean runs(BeanFactory factory) {
        return factory instanceof HierarchicalBeanFactory hierarchical
                ? hierarchical.containsLocalBean(ARGUMENTS)
                : factory.containsBean(ARGUMENTS);
    }

    private static final String ARGUMENTS = "springApplicationArguments";
}
