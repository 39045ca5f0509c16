package com.acme.classpath;

import ai.chalk.compute.function.ChalkFunction;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

/** An application whose function tells which classes its replica can load: what its code snapshot holds. */
@SpringBootApplication(proxyBeanMethods = false)
public class ClassPathApp {

    public static void main(String[] args) {
        SpringApplication.run(ClassPathApp.class, args);
    }

    @Bean
    Probe probe() {
        return new Probe();
    }

    /** A function bean. */
    public static class Probe {

        /** Whether the replica's class path has the class. */
        @ChalkFunction
        public boolean loadable(String className) {
            try {
                Class.forName(className, false, Probe.class.getClassLoader());
                return true;
            } catch (ClassNotFoundException e) {
                return false;
            }
        }
    }
}
