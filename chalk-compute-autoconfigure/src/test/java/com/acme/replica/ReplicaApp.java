package com.acme.replica;

import ai.chalk.compute.function.ChalkFunction;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.ApplicationRunner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.ApplicationContext;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.annotation.Bean;
import org.springframework.context.event.EventListener;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;

/**
 * An application that does work of its own when it starts (a runner, a ready listener, a scheduled task, a bean that
 * opens something expensive, a consumer started with the context) beside a bean of functions that report what ran in the JVM serving them, and one that logs and prints.
 */
@SpringBootApplication(proxyBeanMethods = false)
@EnableScheduling
public class ReplicaApp {

    /** What ran in this JVM. */
    public static final AtomicInteger RUNNER = new AtomicInteger();

    public static final AtomicInteger READY = new AtomicInteger();
    public static final AtomicInteger TICKS = new AtomicInteger();
    public static final AtomicInteger WAREHOUSES = new AtomicInteger();
    public static final AtomicInteger CONSUMERS_STARTED = new AtomicInteger();

    public static void main(String[] args) {
        SpringApplication.run(ReplicaApp.class, args);
    }

    @Bean
    ApplicationRunner importCatalogue() {
        return args -> RUNNER.incrementAndGet();
    }

    @Bean
    Warehouse warehouse() {
        return new Warehouse();
    }

    @Bean
    OrderConsumer orderConsumer() {
        return new OrderConsumer();
    }

    @Bean
    Probe probe(ApplicationContext context) {
        return new Probe(context);
    }

    /** Expensive to make, and no function needs it. */
    public static class Warehouse {
        Warehouse() {
            WAREHOUSES.incrementAndGet();
        }
    }

    /** Starts with the application, as a message listener container does; no function needs it. */
    public static class OrderConsumer implements SmartLifecycle {
        private volatile boolean running;

        @Override
        public void start() {
            CONSUMERS_STARTED.incrementAndGet();
            running = true;
        }

        @Override
        public void stop() {
            running = false;
        }

        @Override
        public boolean isRunning() {
            return running;
        }
    }

    /** Functions on one bean, which also listens to the ready event and ticks on a schedule. */
    public static class Probe {

        private final ApplicationContext context;

        Probe(ApplicationContext context) {
            this.context = context;
        }

        @EventListener(ApplicationReadyEvent.class)
        public void ready() {
            READY.incrementAndGet();
        }

        @Scheduled(fixedDelay = 50)
        public void tick() {
            TICKS.incrementAndGet();
        }

        @ChalkFunction
        public long pid() {
            return ProcessHandle.current().pid();
        }

        /** How often this JVM ran the runner, the ready listener and the scheduled tick, and made the warehouse. */
        @ChalkFunction
        public String startupWork() {
            return "runner=" + RUNNER.get() + " ready=" + READY.get() + " ticks=" + TICKS.get() + " warehouses="
                    + WAREHOUSES.get() + " consumers=" + CONSUMERS_STARTED.get();
        }

        /** The kind of context serving this function (a web server's context is a WebServerApplicationContext). */
        @ChalkFunction
        public String context() {
            return context.getClass().getName();
        }

        @ChalkFunction
        public long pidAgain() {
            return ProcessHandle.current().pid();
        }

        @ChalkFunction
        public String echo(String text) {
            return text;
        }

        /** Logs and prints what it is given. */
        @ChalkFunction
        public int chatty(String text) {
            LoggerFactory.getLogger(Probe.class).info("logged {}", text);
            System.out.println("printed " + text);
            System.err.print("unfinished " + text); // no end of line: still its own line, and the function's
            return text.length();
        }
    }
}
