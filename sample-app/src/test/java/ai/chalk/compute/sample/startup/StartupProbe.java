package ai.chalk.compute.sample.startup;

import ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServer;
import ai.chalk.compute.sandbox.SandboxClient;
import com.example.shop.StartupWebApp;
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
 * so no embedded server), or {@code without} it (its auto-configurations excluded). Prints one line:
 * {@code STARTUP <variant> <ms in SpringApplication.run> <ms since the JVM started> <resident KB> <process CPU ms>
 * <startup thread CPU ms> <CPU ms of the starter's live threads>}, after the instant the startup ended ({@code STARTED_AT}) and, with
 * {@code -Dchalk.startup.steps=N}, the N slowest creations of the starter's beans by their own time and the own time of all its bean
 * steps together ({@code STEP}).
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class StartupProbe {

    /**
     * The auto-configurations the starter adds to an application: Chalk Compute's (and Spring gRPC's client ones, when
     * the application has them), read from the class path's auto-configuration imports so that none is forgotten.
     */
    static final String STARTER_AUTO_CONFIGURATIONS = starterAutoConfigurations();

    private static String starterAutoConfigurations() {
        try {
            java.util.List<String> names = new java.util.ArrayList<>();
            var resources = StartupProbe.class
                    .getClassLoader()
                    .getResources("META-INF/spring/org.springframework.boot.autoconfigure.AutoConfiguration.imports");
            while (resources.hasMoreElements()) {
                try (var in = resources.nextElement().openStream()) {
                    for (String line :
                            new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).split("\n")) {
                        String name = line.strip();
                        if (name.startsWith("ai.chalk.compute.")
                                || name.startsWith("org.springframework.boot.grpc.client.")) {
                            names.add(name);
                        }
                    }
                }
            }
            return String.join(",", names);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * @param args the variant ({@code with}, {@code remote}, {@code without}), then {@code web} for the realistic
     *     application ({@link StartupWebApp}: web server, functions, actuator) or {@code empty} for this one, then
     *     any further application arguments
     */
    public static void main(String[] args) {
        String variant = args.length > 0 ? args[0] : "with";
        boolean web = args.length > 1 && args[1].equals("web");
        boolean with = !variant.equals("without");
        boolean embeddedExpected = variant.equals("with");
        SpringApplication application = new SpringApplication(web ? StartupWebApp.class : StartupProbe.class);
        if (!web) {
            application.setWebApplicationType(WebApplicationType.NONE);
        }
        application.setLogStartupInfo(false);
        // -Dchalk.startup.steps=N prints the N slowest of the starter's startup steps (creations of Chalk Compute's and
        // Spring gRPC's beans) and of the refresh's phases, to find where the time goes
        int steps = Integer.getInteger("chalk.startup.steps", 0);
        org.springframework.boot.context.metrics.buffering.BufferingApplicationStartup recorder =
                new org.springframework.boot.context.metrics.buffering.BufferingApplicationStartup(100_000);
        if (steps > 0) {
            application.setApplicationStartup(recorder);
        }
        String[] properties = with
                ? new String[] {
                    "--spring.main.banner-mode=off",
                    "--logging.level.root=WARN",
                    "--server.port=0",
                    "--management.endpoints.web.exposure.include=health,chalkcompute,chalkfunctions",
                    embeddedExpected
                            ? "--chalk.compute.embedded.enabled=auto"
                            : "--chalk.compute.target=localhost:50051"
                }
                : new String[] {
                    "--spring.main.banner-mode=off",
                    "--logging.level.root=WARN",
                    "--server.port=0",
                    "--management.endpoints.web.exposure.include=health",
                    "--spring.autoconfigure.exclude=" + STARTER_AUTO_CONFIGURATIONS
                };
        String[] all = java.util.stream.Stream.concat(
                        java.util.Arrays.stream(properties),
                        java.util.Arrays.stream(args).skip(2))
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
        // the startup thread's own CPU time: what the application waits for, steadier than wall time on a busy machine
        long startupThreadCpuMillis = ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime() / 1_000_000;
        // what the starter's own threads (chalk-*: preloading, discovery, the embedded server's start, deployment) used
        // of the processor by then: on two cores, time the startup thread may have waited for
        long starterThreadsCpuMillis = starterThreadsCpuMillis();
        long rssKb = residentKb();
        long cpuMillis = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                        .getProcessCpuTime()
                / 1_000_000;
        if (steps > 0) {
            printSteps(recorder.getBufferedTimeline().getEvents(), steps);
        }
        // when the startup's class loading is recorded (JFR), events up to this instant are the startup's
        System.out.println("STARTED_AT " + java.time.Instant.now());
        System.out.println("STARTUP " + variant + " " + runMillis + " " + uptimeMillis + " " + rssKb + " " + cpuMillis
                + " " + startupThreadCpuMillis + " " + starterThreadsCpuMillis);
        System.exit(SpringApplication.exit(context));
    }

    /**
     * Prints the {@code N} slowest creations of the starter's beans by their own time (a step's duration less that of the steps
     * inside it: making a bean also makes the beans it needs first, whoever owns them), then the own time of all the
     * starter's bean steps together.
     */
    private static void printSteps(
            java.util.List<org.springframework.boot.context.metrics.buffering.StartupTimeline.TimelineEvent> events,
            int steps) {
        java.util.Map<Long, java.time.Duration> inside = new java.util.HashMap<>();
        for (var event : events) {
            Long parent = event.getStartupStep().getParentId();
            if (parent != null) {
                inside.merge(parent, event.getDuration(), java.time.Duration::plus);
            }
        }
        java.util.function.ToLongFunction<
                        org.springframework.boot.context.metrics.buffering.StartupTimeline.TimelineEvent>
                own = e -> e.getDuration()
                .minus(inside.getOrDefault(e.getStartupStep().getId(), java.time.Duration.ZERO))
                .toMillis();
        events.stream()
                .filter(e -> isStarters(e.getStartupStep()) && ofABean(e.getStartupStep()))
                .sorted(java.util.Comparator.comparingLong(own).reversed())
                .limit(steps)
                .forEach(e -> System.out.println("STEP " + own.applyAsLong(e) + " ms own ("
                        + e.getDuration().toMillis() + " ms in all) "
                        + e.getStartupStep().getName() + " " + tags(e.getStartupStep())));
        long beans = events.stream()
                .filter(e -> isStarters(e.getStartupStep()) && ofABean(e.getStartupStep()))
                .mapToLong(own)
                .sum();
        System.out.println("STEP " + beans + " ms own in all the starter's bean steps together");
    }

    private static boolean ofABean(org.springframework.core.metrics.StartupStep step) {
        for (org.springframework.core.metrics.StartupStep.Tag tag : step.getTags()) {
            if (tag.getKey().equals("beanName")) {
                return true;
            }
        }
        return false;
    }

    /** The CPU time of the live threads whose names start with {@code chalk}, in milliseconds. */
    private static long starterThreadsCpuMillis() {
        java.lang.management.ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long nanos = 0;
        for (java.lang.management.ThreadInfo info : threads.getThreadInfo(threads.getAllThreadIds())) {
            if (info != null && info.getThreadName().startsWith("chalk")) {
                nanos += Math.max(0, threads.getThreadCpuTime(info.getThreadId()));
            }
        }
        return nanos / 1_000_000;
    }

    /** The process's resident memory, from /proc (0 where there is none). */
    private static long residentKb() {
        try {
            for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", ""));
                }
            }
        } catch (java.io.IOException e) {
            return 0;
        }
        return 0;
    }

    /**
     * Whether a startup step is the starter's: the creation or initialisation of a bean of Chalk Compute or Spring
     * gRPC, or a step of no bean (a phase of the refresh, which the starter's conditions and beans lengthen).
     */
    private static boolean isStarters(org.springframework.core.metrics.StartupStep step) {
        boolean ofABean = false;
        for (org.springframework.core.metrics.StartupStep.Tag tag : step.getTags()) {
            if (tag.getKey().equals("beanName") || tag.getKey().equals("beanType")) {
                ofABean = true;
                String value = String.valueOf(tag.getValue()).toLowerCase(java.util.Locale.ROOT);
                if (value.contains("chalk") || value.contains("grpc")) {
                    return true;
                }
            }
        }
        return !ofABean;
    }

    private static String tags(org.springframework.core.metrics.StartupStep step) {
        StringBuilder out = new StringBuilder();
        step.getTags()
                .forEach(t ->
                        out.append(t.getKey()).append('=').append(t.getValue()).append(' '));
        return out.toString();
    }
}
