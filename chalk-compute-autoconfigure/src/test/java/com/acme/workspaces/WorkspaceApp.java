package com.acme.workspaces;

import ai.chalk.compute.function.ChalkFunction;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

/**
 * An application with a function that provisions a sandbox through the application's own {@link SandboxClient}
 * and returns it: in a worker, that client talks to the server running the worker.
 */
@SpringBootApplication
public class WorkspaceApp {

    public static void main(String[] args) {
        SpringApplication.run(WorkspaceApp.class, args);
    }

    @Bean
    Workspaces workspaces(SandboxClient client) {
        return new Workspaces(client);
    }

    /** Provisions workspaces. */
    public static class Workspaces {

        private final SandboxClient client;

        public Workspaces(SandboxClient client) {
            this.client = client;
        }

        @ChalkFunction(description = "A sandbox with a checked-out project")
        public Sandbox workspace(String project) {
            Sandbox sandbox = client.create(Sandbox.builder().name("workspace-" + project));
            sandbox.files().writeText("/tmp/" + project + "/README", "project " + project + "\n");
            return sandbox;
        }
    }
}
