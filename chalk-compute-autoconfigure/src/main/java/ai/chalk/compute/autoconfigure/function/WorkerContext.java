package ai.chalk.compute.autoconfigure.function;

import ai.chalk.compute.function.worker.FunctionBinding;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.BeansException;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.BeanFactoryPostProcessor;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.beans.factory.support.AbstractBeanDefinition;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.boot.ApplicationContextFactory;
import org.springframework.boot.ApplicationRunner;
import org.springframework.boot.CommandLineRunner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.boot.context.event.ApplicationStartedEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.Lifecycle;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.event.ApplicationListenerMethodAdapter;
import org.springframework.context.event.SimpleApplicationEventMulticaster;
import org.springframework.context.support.AbstractApplicationContext;
import org.springframework.context.support.DefaultLifecycleProcessor;
import org.springframework.core.ResolvableType;
import org.springframework.scheduling.config.TaskManagementConfigUtils;
import org.springframework.util.ClassUtils;

/**
 * The application as a function replica boots it: only what its functions need, and none of the work the application
 * does on its own. A replica runs the functions' beans, nothing else of the application's:
 * <ul>
 *   <li>no web server ({@link WebApplicationType#NONE}), no embedded Chalk Compute server;</li>
 *   <li>lazy initialization, with the beans of the functions served made at startup: a bean the functions do not
 *       depend on is never made (its connections never opened, its {@code @PostConstruct} never run);</li>
 *   <li>no {@code ApplicationRunner} or {@code CommandLineRunner} runs: they are hidden from
 *       {@link SpringApplication}, though a function may still depend on such a bean;</li>
 *   <li>no {@code @Scheduled} method runs: the scheduling annotation processor is removed;</li>
 *   <li>only the {@link Lifecycle} beans the functions depend on start (a message listener container or a gRPC server
 *       elsewhere in the application stays stopped);</li>
 *   <li>listeners declared in the application's own packages do not hear {@link ApplicationStartedEvent} or
 *       {@link ApplicationReadyEvent}, the events that start an application's own work; other events reach them.</li>
 * </ul>
 * Everything else is the application's as usual: its {@code application.yml}, profiles and auto-configuration.
 */
final class WorkerContext {

    private static final Logger log = LoggerFactory.getLogger(WorkerContext.class);

    /** The name under which {@link SpringApplication} asks for runners (a package-private type of Boot's). */
    private static final String RUNNER_TYPE = "org.springframework.boot.Runner";

    private WorkerContext() {}

    /**
     * Boots the application as a replica serving {@code functions}.
     *
     * @param mainClass the application's {@code @SpringBootApplication} class
     * @param functions what the replica serves: their beans (and their dependencies) are made at startup
     * @param args      the worker's command line arguments, which win over the application's configuration
     * @return the running context
     */
    static ConfigurableApplicationContext boot(Class<?> mainClass, List<FunctionBinding> functions, String[] args) {
        SpringApplication application = new SpringApplication(mainClass);
        application.setMainApplicationClass(mainClass); // its log says "Started <the application>", not the worker
        application.setWebApplicationType(WebApplicationType.NONE);
        application.setLazyInitialization(true);
        application.setApplicationContextFactory(
                ApplicationContextFactory.of(() -> new AnnotationConfigApplicationContext(new WorkerBeanFactory())));
        String ownPackage = mainClass.getPackageName();
        application.addInitializers(context -> {
            ConfigurableListableBeanFactory beanFactory = context.getBeanFactory();
            // a bean of these names replaces the context's default (AbstractApplicationContext looks them up first)
            beanFactory.registerSingleton(
                    AbstractApplicationContext.APPLICATION_EVENT_MULTICASTER_BEAN_NAME,
                    new WorkerEventMulticaster(beanFactory, ownPackage));
            WorkerLifecycleProcessor lifecycle = new WorkerLifecycleProcessor();
            lifecycle.setBeanFactory(beanFactory);
            // what Boot's own processor, which this one replaces, would have honoured
            java.time.Duration shutdownPhase = context.getEnvironment()
                    .getProperty("spring.lifecycle.timeout-per-shutdown-phase", java.time.Duration.class);
            if (shutdownPhase != null) {
                lifecycle.setTimeoutPerShutdownPhase(shutdownPhase.toMillis());
            }
            beanFactory.registerSingleton(AbstractApplicationContext.LIFECYCLE_PROCESSOR_BEAN_NAME, lifecycle);
            context.addBeanFactoryPostProcessor(new FunctionBeansOnly(functions));
        });
        return application.run(args);
    }

    /**
     * Whether a class is the application's own: in the package of its main class or below (nothing is, for an
     * application in the default package, rather than everything, Spring's own listeners included).
     */
    static boolean own(Class<?> type, String ownPackage) {
        return !ownPackage.isEmpty() && ClassUtils.getUserClass(type).getName().startsWith(ownPackage + ".");
    }

    /** A bean factory that does not tell {@link SpringApplication} of the runners it holds. */
    static final class WorkerBeanFactory extends DefaultListableBeanFactory {

        @Override
        public String[] getBeanNamesForType(@Nullable Class<?> type) {
            if (type != null
                    && (type.getName().equals(RUNNER_TYPE)
                            || type == ApplicationRunner.class
                            || type == CommandLineRunner.class)) {
                String[] runners = super.getBeanNamesForType(type, true, false);
                if (runners.length > 0) {
                    log.debug("Not running {} in this function replica: {}", type.getSimpleName(), List.of(runners));
                }
                return new String[0];
            }
            return super.getBeanNamesForType(type);
        }
    }

    /**
     * Makes the served functions' beans (found by class, as the worker's bindings name them) the context's only
     * eager application beans, and removes the {@code @Scheduled} processor. Runs before Boot's lazy-initialization
     * processor, which leaves the definitions it finds set explicitly alone.
     */
    static final class FunctionBeansOnly implements BeanFactoryPostProcessor {

        private final Set<String> classNames;

        FunctionBeansOnly(List<FunctionBinding> functions) {
            this.classNames = functions.stream().map(FunctionBinding::className).collect(Collectors.toSet());
        }

        @Override
        public void postProcessBeanFactory(ConfigurableListableBeanFactory beanFactory) throws BeansException {
            String scheduling = TaskManagementConfigUtils.SCHEDULED_ANNOTATION_PROCESSOR_BEAN_NAME;
            if (beanFactory instanceof BeanDefinitionRegistry registry && registry.containsBeanDefinition(scheduling)) {
                registry.removeBeanDefinition(scheduling);
                log.debug("@Scheduled methods do not run in this function replica");
            }
            for (String beanName : beanFactory.getBeanDefinitionNames()) {
                BeanDefinition definition = beanFactory.getBeanDefinition(beanName);
                if (definition.isAbstract() || !(definition instanceof AbstractBeanDefinition bean)) {
                    continue;
                }
                Class<?> type = beanFactory.getType(beanName, false);
                if (type != null && serves(ClassUtils.getUserClass(type))) {
                    bean.setLazyInit(false);
                }
            }
        }

        /** Whether a bean of this class declares functions served: its class, or a superclass, is named. */
        private boolean serves(Class<?> type) {
            for (Class<?> c = type; c != null && c != Object.class; c = c.getSuperclass()) {
                if (classNames.contains(c.getName())) {
                    return true;
                }
            }
            return false;
        }
    }

    /**
     * Starts the {@link Lifecycle} beans that exist, not every {@code SmartLifecycle} of the context as Spring's
     * default does (it makes lazy ones to start them): in a replica those are the functions' and their dependencies'.
     */
    static final class WorkerLifecycleProcessor extends DefaultLifecycleProcessor {

        private @Nullable ConfigurableListableBeanFactory beanFactory;

        @Override
        public void setBeanFactory(BeanFactory beanFactory) {
            super.setBeanFactory(beanFactory);
            this.beanFactory = (ConfigurableListableBeanFactory) beanFactory;
        }

        @Override
        protected Map<String, Lifecycle> getLifecycleBeans() {
            Map<String, Lifecycle> beans = new LinkedHashMap<>();
            ConfigurableListableBeanFactory factory = beanFactory;
            if (factory == null) {
                return beans;
            }
            for (String beanName : factory.getBeanNamesForType(Lifecycle.class, false, false)) {
                if (factory.containsSingleton(beanName)
                        && factory.getSingleton(beanName) instanceof Lifecycle lifecycle
                        && lifecycle != this) {
                    beans.put(beanName, lifecycle);
                }
            }
            return beans;
        }
    }

    /**
     * Keeps {@link ApplicationStartedEvent} and {@link ApplicationReadyEvent} from the listeners of the application's
     * own packages ({@code ApplicationListener} beans, which are then not even made, and {@code @EventListener}
     * methods): the work an application starts when it is up is the application's, not a replica's.
     */
    static final class WorkerEventMulticaster extends SimpleApplicationEventMulticaster {

        private final String ownPackage;

        WorkerEventMulticaster(BeanFactory beanFactory, String ownPackage) {
            super(beanFactory);
            this.ownPackage = ownPackage;
        }

        /** For a listener bean, before it is made. */
        @Override
        protected boolean supportsEvent(Class<?> listenerType, ResolvableType eventType) {
            return !(startup(eventType) && own(listenerType, ownPackage))
                    && super.supportsEvent(listenerType, eventType);
        }

        @Override
        protected boolean supportsEvent(
                ApplicationListener<?> listener, ResolvableType eventType, @Nullable Class<?> sourceType) {
            Class<?> declaredBy = listener instanceof ApplicationListenerMethodAdapter method
                    ? method.getTargetMethod().getDeclaringClass()
                    : listener.getClass();
            return !(startup(eventType) && own(declaredBy, ownPackage))
                    && super.supportsEvent(listener, eventType, sourceType);
        }

        private static boolean startup(ResolvableType eventType) {
            Class<?> event = eventType.toClass();
            return ApplicationStartedEvent.class.isAssignableFrom(event)
                    || ApplicationReadyEvent.class.isAssignableFrom(event);
        }
    }
}
