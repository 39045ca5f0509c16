package ai.chalk.compute.autoconfigure.function;

import ai.chalk.compute.autoconfigure.SpringApplicationRun;
import ai.chalk.compute.function.ChalkClass;
import ai.chalk.compute.function.ChalkFunction;
import ai.chalk.compute.function.ChalkScorer;
import ai.chalk.compute.function.FunctionDefinition;
import ai.chalk.compute.function.FunctionDefinitionException;
import ai.chalk.compute.function.FunctionKind;
import ai.chalk.compute.function.FunctionRegistry;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanFactoryAware;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * The application's functions: every singleton bean with {@link ChalkFunction} or {@link ChalkScorer} methods
 * (a {@link ChalkClass} bean being one deployment of all its methods), registered in a {@link FunctionRegistry}
 * once all singletons exist, so each function runs on the bean Spring made, with its dependencies and proxies.
 *
 * <p>The startup thread only finds the annotated methods; reading their signatures (Arrow schemas, {@code @Default}
 * values) runs on a thread of its own, begun once the application is ready ({@link ApplicationReadyEvent}: after its
 * web server and its runners), or when the deployment begins first ({@link ChalkFunctionsDeployment#RUNNERS_GRACE}
 * after the application started, for runners that work on), so that the application's startup neither pays for
 * loading Arrow and JSON machinery nor shares the processor with it; in a context no {@code SpringApplication} runs (no
 * such event), it begins at once. Every method of this class that tells about the functions ({@link #functions()},
 * {@link #registry()}, ...) begins the reading if it has not begun and waits for it to finish, so callers always see
 * every function.
 *
 * <p>A function that cannot be registered (a {@code FunctionSignatureException}, a malformed option, a name taken
 * twice) does not stop the application, nor the other functions of its bean: it alone is
 * {@link FunctionDeploymentState.Status#FAILED} with its own message from the registry, shown by health and the
 * endpoint, and logged at ERROR with the method's location, as a stack frame reads, and without the starter's own
 * frames. A malformed {@code @ChalkClass} fails all its methods, with its message. Thread-safe.
 */
public class ChalkFunctions
        implements SmartInitializingSingleton, BeanFactoryAware, ApplicationListener<ApplicationReadyEvent> {

    private static final Logger log = LoggerFactory.getLogger(ChalkFunctions.class);

    private final FunctionRegistry registry;
    private final boolean madeBeansOnly;
    private final Map<String, FunctionDeploymentState> states = new LinkedHashMap<>(); // guarded by this
    private ListableBeanFactory beanFactory;
    /** Done when every function found has been registered or has failed; done at once when nothing is discovered. */
    private volatile CompletableFuture<Void> registered = CompletableFuture.completedFuture(null);
    /** The reading of the functions found, until it begins. */
    private Runnable reading; // guarded by this
    /** Run by every method that waits for a function's deployment, so that it begins if it has not (deferred). */
    private volatile Runnable deploymentWanted = () -> {};

    /**
     * Functions registered in the given registry.
     *
     * @param registry the registry to fill
     */
    public ChalkFunctions(FunctionRegistry registry) {
        this(registry, false);
    }

    /**
     * Functions registered in the given registry, from every function bean or, in a function replica, only from those
     * the context made (the beans of the functions it serves: a replica makes nothing else of the application).
     *
     * @param registry      the registry to fill
     * @param madeBeansOnly whether to leave out the function beans the context has not made
     */
    public ChalkFunctions(FunctionRegistry registry, boolean madeBeansOnly) {
        this.registry = Objects.requireNonNull(registry, "registry");
        this.madeBeansOnly = madeBeansOnly;
    }

    @Override
    public void setBeanFactory(BeanFactory beanFactory) {
        if (beanFactory instanceof ListableBeanFactory listable) {
            this.beanFactory = listable;
        }
    }

    /** Discovers the functions of the context's singletons, once they all exist. */
    @Override
    public void afterSingletonsInstantiated() {
        if (beanFactory != null) {
            discover(beanFactory);
        }
    }

    /**
     * The registry holding every function registered, for calling them in this JVM as a worker does; once every
     * function found has been read.
     */
    public FunctionRegistry registry() {
        awaitRegistration();
        return registry;
    }

    /** Every function found, registered or failed, in discovery order. */
    public List<FunctionDeploymentState> functions() {
        awaitRegistration();
        synchronized (this) {
            return List.copyOf(states.values());
        }
    }

    /**
     * Waits until every function found at startup has been registered or has failed (their signatures are read in
     * the background).
     *
     * @throws IllegalStateException when the reading failed unexpectedly (a bad signature is no such failure: it fails
     *     its function alone)
     */
    public void awaitRegistration() {
        beginReading();
        try {
            registered.join();
        } catch (java.util.concurrent.CompletionException e) {
            throw new IllegalStateException(
                    "Chalk functions could not be read: " + e.getCause().getMessage(), e.getCause());
        }
    }

    /**
     * One function.
     *
     * @param name its registered name
     * @return its state, if there is a function of that name
     */
    public Optional<FunctionDeploymentState> function(String name) {
        awaitRegistration();
        synchronized (this) {
            return Optional.ofNullable(states.get(name));
        }
    }

    /** The functions that failed. */
    public List<FunctionDeploymentState> failures() {
        awaitRegistration();
        synchronized (this) {
            return states.values().stream()
                    .filter(s -> s.status() == FunctionDeploymentState.Status.FAILED)
                    .toList();
        }
    }

    void discover(ListableBeanFactory factory) {
        long started = System.nanoTime();
        List<Found> found = new ArrayList<>();
        // singletons only, without initialising factory beans or lazy beans just to learn their type
        for (String beanName : factory.getBeanNamesForType(Object.class, false, false)) {
            Class<?> type = factory.getType(beanName, false);
            if (type == null
                    || (madeBeansOnly
                            && factory instanceof org.springframework.beans.factory.config.SingletonBeanRegistry made
                            && !made.containsSingleton(beanName))) {
                continue;
            }
            if (isFrameworkClass(type)) {
                continue;
            }
            List<Method> methods = annotatedMethods(ClassUtils.getUserClass(type));
            if (methods.isEmpty()) {
                continue;
            }
            found.add(new Found(beanName, ClassUtils.getUserClass(type), factory.getBean(beanName), methods));
        }
        if (found.isEmpty()) {
            return;
        }
        // reading the signatures loads Arrow and Jackson (a few hundred classes): not on the startup thread, and not
        // while it still works (two cores: a thread loading classes beside it slows it down by as much)
        CompletableFuture<Void> reading = new CompletableFuture<>();
        registered = reading;
        Runnable begin = () -> startReader(found, reading, started);
        synchronized (this) {
            this.reading = begin;
        }
        if (!SpringApplicationRun.runs(factory)) {
            beginReading(); // no ApplicationReadyEvent comes
        }
    }

    /** The application is ready: the reading begins, if nothing has asked for the functions before. */
    @Override
    public void onApplicationEvent(ApplicationReadyEvent event) {
        beginReading();
    }

    private void beginReading() {
        Runnable begin;
        synchronized (this) {
            begin = reading;
            reading = null;
        }
        if (begin != null) {
            begin.run();
        }
    }

    private void startReader(List<Found> found, CompletableFuture<Void> reading, long started) {
        Thread reader = new Thread(
                () -> {
                    try {
                        for (Found bean : found) {
                            register(bean.beanName(), bean.type(), bean.bean(), bean.methods());
                        }
                        reading.complete(null);
                    } catch (RuntimeException | Error e) {
                        log.error("Chalk functions could not be read", e);
                        reading.completeExceptionally(e);
                    }
                    log.debug(
                            "Chalk functions discovered: {} in {} ms",
                            found.size(),
                            (System.nanoTime() - started) / 1_000_000);
                },
                "chalk-functions-discovery");
        reader.setDaemon(true);
        reader.start();
    }

    /** A bean with function methods, found on the startup thread and registered in the background. */
    private record Found(String beanName, Class<?> type, Object bean, List<Method> methods) {}

    private void register(String beanName, Class<?> type, Object bean, List<Method> methods) {
        FunctionRegistry.Registration registration;
        try {
            registration = registry.registerEach(bean);
        } catch (FunctionDefinitionException e) {
            // the class itself is wrong (a malformed @ChalkClass): every function it declares fails with its message
            String message = e.getMessage();
            Method first = methods.get(0);
            log.error(
                    "Chalk functions of bean '{}' cannot be deployed: {}\n\tat {}",
                    beanName,
                    message,
                    SourceLocation.of(first));
            for (Method method : methods) {
                put(failed(expectedName(method, type), method, beanName, message));
            }
            return;
        }
        for (FunctionDefinition definition : registration.registered()) {
            put(FunctionDeploymentState.discovered(
                    definition.name(),
                    definition.kind(),
                    beanName,
                    SourceLocation.of(definition.method()),
                    FunctionDeploymentState.Status.DISCOVERED,
                    null));
        }
        // each invalid method fails alone, with its own message; its neighbours on the bean deploy
        for (FunctionRegistry.Rejected rejected : registration.rejected()) {
            Method method = rejected.method();
            String name = expectedName(method, type);
            String message = rejected.error().getMessage();
            log.error(
                    "Chalk function {} of bean '{}' cannot be deployed: {}\n\tat {}",
                    name,
                    beanName,
                    message,
                    SourceLocation.of(method));
            put(failed(name, method, beanName, message));
        }
    }

    private synchronized FunctionDeploymentState failed(String name, Method method, String beanName, String message) {
        // a name another function holds (the usual reason for this one's failure) is shown with its bean beside it
        String shown = states.containsKey(name) ? name + " (" + beanName + ")" : name;
        return FunctionDeploymentState.discovered(
                shown,
                kindOf(method),
                beanName,
                SourceLocation.of(method),
                FunctionDeploymentState.Status.FAILED,
                message);
    }

    /**
     * Moves a function to a new state, as its deployment progresses.
     *
     * @param name    the function's name
     * @param changes turns the current state into the new one
     */
    synchronized void update(String name, java.util.function.UnaryOperator<FunctionDeploymentState> changes) {
        states.computeIfPresent(name, (n, current) -> changes.apply(current));
        notifyAll(); // wakes awaitDeployment
    }

    /**
     * Waits until a function's background deployment has ended: {@link FunctionDeploymentState.Status#DEPLOYED} or
     * {@link FunctionDeploymentState.Status#FAILED}. A function still discovered, deploying or retrying when the
     * timeout passes is returned as it stands.
     *
     * @param name    the function's registered name
     * @param timeout how long to wait at most
     * @return its state, or empty when the application has no function of that name
     * @throws InterruptedException when the thread is interrupted while waiting
     */
    public Optional<FunctionDeploymentState> awaitDeployment(String name, java.time.Duration timeout)
            throws InterruptedException {
        awaitRegistration();
        deploymentWanted.run(); // a deployment deferred until the application is ready begins now
        return waitForDeployment(name, timeout);
    }

    /**
     * Called by a method that waits for a function's deployment, so that a deployment deferred until the application
     * is ready begins at once.
     *
     * @param begin begins the deployment, if it has not begun; called on the waiting thread
     */
    void onDeploymentWanted(Runnable begin) {
        deploymentWanted = Objects.requireNonNull(begin, "begin");
    }

    private synchronized Optional<FunctionDeploymentState> waitForDeployment(String name, java.time.Duration timeout)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            FunctionDeploymentState state = states.get(name);
            if (state == null
                    || state.status() == FunctionDeploymentState.Status.DEPLOYED
                    || state.status() == FunctionDeploymentState.Status.FAILED) {
                return Optional.ofNullable(state);
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return Optional.of(state);
            }
            java.util.concurrent.TimeUnit.NANOSECONDS.timedWait(this, left);
        }
    }

    private synchronized void put(FunctionDeploymentState state) {
        states.putIfAbsent(state.name(), state);
    }

    /**
     * Whether a bean's class belongs to a framework (Spring, Jackson, gRPC, Micrometer, Tomcat, the JDK): none declares
     * functions, and reading every method of the few hundred such beans of a web application (which loads every type
     * their signatures name) was most of the discovery's time on the startup thread.
     */
    static boolean isFrameworkClass(Class<?> type) {
        String name = type.getName();
        for (String prefix : FRAMEWORK_PACKAGES) {
            if (name.startsWith(prefix)) {
                return true;
            }
        }
        return false;
    }

    private static final List<String> FRAMEWORK_PACKAGES = List.of(
            "java.",
            "javax.",
            "jakarta.",
            "org.springframework.",
            "com.fasterxml.jackson.",
            "tools.jackson.",
            "io.grpc.",
            "io.micrometer.",
            "io.opentelemetry.",
            "io.netty.",
            "org.apache.catalina.",
            "org.apache.tomcat.",
            "org.apache.coyote.",
            "ch.qos.logback.",
            "org.slf4j.",
            "ai.chalk.compute.autoconfigure.");

    /** Public methods, own and inherited, annotated as functions; overridden ones counted once. */
    static List<Method> annotatedMethods(Class<?> type) {
        List<Method> found = new ArrayList<>();
        if (type.isInterface()) {
            return found;
        }
        for (Method method : ReflectionUtils.getUniqueDeclaredMethods(type, ReflectionUtils.USER_DECLARED_METHODS)) {
            if (method.isAnnotationPresent(ChalkFunction.class) || method.isAnnotationPresent(ChalkScorer.class)) {
                found.add(method);
            }
        }
        found.sort(java.util.Comparator.comparing(Method::getName));
        return found;
    }

    /** The name the registry would give the method: its own or the method's, after its class's for a {@code @ChalkClass}. */
    private static String expectedName(Method method, Class<?> type) {
        ChalkFunction function = method.getAnnotation(ChalkFunction.class);
        ChalkScorer scorer = method.getAnnotation(ChalkScorer.class);
        String declared = function != null ? function.name() : scorer != null ? scorer.name() : "";
        String own = declared.isEmpty() ? method.getName() : declared;
        ChalkClass chalkClass = type.getAnnotation(ChalkClass.class);
        if (chalkClass == null) {
            return own;
        }
        return (chalkClass.name().isEmpty() ? type.getSimpleName() : chalkClass.name()) + "." + own;
    }

    private static FunctionKind kindOf(Method method) {
        return method.isAnnotationPresent(ChalkScorer.class) ? FunctionKind.SCORER : FunctionKind.FUNCTION;
    }
}
