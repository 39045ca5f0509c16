package com.acme.functions;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

/** An application whose beans declare functions, booted by the worker in {@code spring:} mode. */
@SpringBootApplication
public class WorkerApp {

    public static void main(String[] args) {
        SpringApplication.run(WorkerApp.class, args);
    }

    @Bean
    Greeting greeting() {
        return new Greeting("Welcome");
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
