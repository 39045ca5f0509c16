package com.acme;

import ai.chalk.compute.function.ChalkFunction;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** Provisioning functions that return sandbox handles, and one that takes one. */
public class Agents {

    private final SandboxClient client;

    public Agents(SandboxClient client) {
        this.client = client;
    }

    @ChalkFunction(description = "Starts a sandbox with a workspace")
    public Sandbox provisionAgent() {
        Sandbox sandbox = client.create();
        sandbox.exec("mkdir", "-p", "/tmp/workspace");
        return sandbox;
    }

    @ChalkFunction
    public Optional<Sandbox> maybeProvision(boolean wanted) {
        return wanted ? Optional.of(client.create()) : Optional.empty();
    }

    @ChalkFunction
    public List<Sandbox> provisionMany(int count) {
        List<Sandbox> sandboxes = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            sandboxes.add(client.create());
        }
        return sandboxes;
    }

    @ChalkFunction
    public String run(Sandbox sandbox, String text) {
        return sandbox.exec("echo", text).stdoutText().strip();
    }
}
