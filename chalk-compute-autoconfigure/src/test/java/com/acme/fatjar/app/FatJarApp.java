package com.acme.fatjar.app;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * An application packaged by the test as a Spring Boot executable jar (its {@code Start-Class}) and run with
 * {@code java -jar}; its function's workers boot it from the deployed code, without Boot's launcher.
 */
@SpringBootApplication
public class FatJarApp {

    public static void main(String[] args) {
        SpringApplication.run(FatJarApp.class, args);
    }
}
