package ai.chalk.compute.code;

import ai.chalk.compute.sandbox.ExecResult;
import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.command.CreateContainerResponse;
import com.github.dockerjava.api.exception.DockerException;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.model.ExposedPort;
import com.github.dockerjava.api.model.Frame;
import com.github.dockerjava.api.model.HostConfig;
import com.github.dockerjava.api.model.Ports;
import com.github.dockerjava.api.model.StreamType;
import com.github.dockerjava.core.DefaultDockerClientConfig;
import com.github.dockerjava.core.DockerClientImpl;
import com.github.dockerjava.httpclient5.ApacheDockerHttpClient;
import java.io.IOException;
import java.net.URI;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The {@code docker} variant, as code_sandboxes' {@code DockerSandbox}: a container of an image with a Jupyter server
 * and a Python kernel ({@link #DEFAULT_IMAGE} unless {@link SandboxConfig.Builder#environment(String)} names
 * another), on the Docker engine that {@code DOCKER_HOST} names (the local socket otherwise). The server's port is
 * published on loopback only, its token is fresh per container; snippets and files go through the Jupyter server
 * (the contents API, rooted at the container's {@code /}), commands through the engine's exec. The container is
 * removed when the sandbox closes.
 */
final class DockerJupyter implements AutoCloseable, CodeCommands.Runner {

    /** The image {@code ci/build-test-images.sh jupyter} builds from Debian's packages. */
    static final String DEFAULT_IMAGE = "chalk-compute/jupyter:bookworm";

    static final String LABEL = "ai.chalk.compute.code-sandbox";
    private static final int PORT = 8888;
    private static final Pattern QUANTITY = Pattern.compile("(\\d+(?:\\.\\d+)?)([KMGT]i?|[kmgt]|)");

    final JupyterRunner runner;
    final String workdir;
    private final DockerClient docker;
    private final String containerId;
    private final Map<String, String> env;

    private DockerJupyter(
            DockerClient docker, String containerId, String workdir, Map<String, String> env, JupyterRunner runner) {
        this.docker = docker;
        this.containerId = containerId;
        this.workdir = workdir;
        this.env = env;
        this.runner = runner;
    }

    static DockerJupyter start(SandboxConfig config) {
        if (config.gpu().isPresent()) {
            throw new IllegalArgumentException(
                    "the docker variant runs no GPUs; use the chalk variant on a server" + " with GPUs");
        }
        DefaultDockerClientConfig engine =
                DefaultDockerClientConfig.createDefaultConfigBuilder().build();
        DockerClient docker = client(engine);
        String image = config.snapshot().or(config::environment).orElse(DEFAULT_IMAGE);
        String containerId = null;
        try {
            try {
                docker.inspectImageCmd(image).exec();
            } catch (NotFoundException e) {
                if (config.snapshot().isPresent()) {
                    throw new IllegalArgumentException("no docker snapshot " + image + " on the Docker engine at "
                            + engine.getDockerHost() + " (CodeSnapshot.id() of a docker sandbox's createSnapshot"
                            + " names one: an image of the committed container)");
                }
                throw new IllegalStateException(
                        "the docker variant's image " + image + " is not on the Docker engine at "
                                + engine.getDockerHost() + ": build it with ci/build-test-images.sh jupyter (Debian's"
                                + " python3, jupyter-server and python3-ipykernel), or name an image with jupyter-server and"
                                + " ipykernel in SandboxConfig.environment(...)");
            }
            String workdir = config.workingDir().orElse("/workspace");
            if (!workdir.startsWith("/")) {
                throw new IllegalArgumentException(
                        "the docker variant's working directory must be absolute, got " + workdir);
            }
            String token = HexFormat.of().formatHex(random());
            Map<String, String> env = new LinkedHashMap<>(config.env());
            List<String> containerEnv = new ArrayList<>();
            env.forEach((k, v) -> containerEnv.add(k + "=" + v));
            containerEnv.add("JUPYTER_TOKEN=" + token);
            ExposedPort jupyterPort = ExposedPort.tcp(PORT);
            Ports ports = new Ports();
            ports.bind(jupyterPort, Ports.Binding.bindIp("127.0.0.1"));
            HostConfig host = HostConfig.newHostConfig().withPortBindings(ports).withInit(true);
            config.memory().ifPresent(m -> host.withMemory(bytes(m)));
            config.cpu().ifPresent(c -> host.withNanoCPUs(nanoCpus(c)));
            Map<String, String> labels = new LinkedHashMap<>(config.tags());
            labels.put(LABEL, "docker");
            CreateContainerResponse created = docker.createContainerCmd(image)
                    .withCmd(
                            "jupyter-server",
                            "--allow-root",
                            "--no-browser",
                            "--ServerApp.ip=0.0.0.0",
                            "--ServerApp.port=" + PORT,
                            "--ServerApp.port_retries=0",
                            "--ServerApp.root_dir=/",
                            "--ContentsManager.allow_hidden=True")
                    .withWorkingDir(workdir)
                    .withEnv(containerEnv)
                    .withExposedPorts(jupyterPort)
                    .withLabels(labels)
                    .withHostConfig(host)
                    .exec();
            containerId = created.getId();
            docker.startContainerCmd(containerId).exec();
            Ports.Binding[] bound = docker.inspectContainerCmd(containerId)
                    .exec()
                    .getNetworkSettings()
                    .getPorts()
                    .getBindings()
                    .get(jupyterPort);
            if (bound == null || bound.length == 0) {
                throw new IllegalStateException(
                        "the Docker engine published no port for the container's Jupyter" + " server");
            }
            URI url = URI.create("http://127.0.0.1:" + bound[0].getHostPortSpec() + "/");
            String id = containerId;
            JupyterRunner.awaitServer(url, token, LocalJupyter.START, () -> {
                Boolean running =
                        docker.inspectContainerCmd(id).exec().getState().getRunning();
                return Boolean.TRUE.equals(running)
                        ? Optional.empty()
                        : Optional.of("the docker variant's container " + id.substring(0, 12) + " (image " + image
                                + ") ended: " + logs(docker, id));
            });
            JupyterRunner runner = new JupyterRunner(url, token, workdir.substring(1));
            return new DockerJupyter(docker, containerId, workdir, env, runner);
        } catch (RuntimeException e) {
            if (containerId != null) {
                remove(docker, containerId);
            }
            close(docker);
            throw e instanceof DockerException
                    ? new IllegalStateException(
                            "the Docker engine at " + engine.getDockerHost() + " refused: " + e.getMessage(), e)
                    : e;
        }
    }

    /** The repository of the images docker snapshots commit (each snapshot a tag of it). */
    static final String SNAPSHOT_REPOSITORY = "chalk-compute/code-snapshot";

    /** The label naming a snapshot image's name, to find them with {@code docker images --filter label=...}. */
    static final String SNAPSHOT_LABEL = "ai.chalk.compute.code-snapshot";

    private static DockerClient client(DefaultDockerClientConfig engine) {
        return DockerClientImpl.getInstance(
                engine,
                new ApacheDockerHttpClient.Builder()
                        .dockerHost(engine.getDockerHost())
                        .sslConfig(engine.getSSLConfig())
                        .connectionTimeout(Duration.ofSeconds(10))
                        .build());
    }

    /**
     * Commits the container (its filesystem, paused while it is written) to {@code chalk-compute/code-snapshot:KEY};
     * returns that name. The Jupyter server's token is blanked in the image's environment: each container from it
     * gets a fresh one.
     */
    String commit(String name, String key) {
        try {
            docker.commitCmd(containerId)
                    .withRepository(SNAPSHOT_REPOSITORY)
                    .withTag(key)
                    .withPause(true)
                    .withEnv("JUPYTER_TOKEN=")
                    .withLabels(Map.of(SNAPSHOT_LABEL, name))
                    .withMessage("chalk-compute code sandbox snapshot " + name)
                    .exec();
        } catch (DockerException e) {
            throw new IllegalStateException(
                    "the Docker engine refused to commit the container " + containerId.substring(0, 12)
                            + " for the snapshot " + name + ": " + e.getMessage(),
                    e);
        }
        return SNAPSHOT_REPOSITORY + ":" + key;
    }

    /** Removes a snapshot's image; containers made from it keep running. */
    static void removeImage(String image) {
        DockerClient docker =
                client(DefaultDockerClientConfig.createDefaultConfigBuilder().build());
        try {
            docker.removeImageCmd(image).withNoPrune(false).exec();
        } catch (NotFoundException e) {
            // deleted already
        } finally {
            close(docker);
        }
    }

    /** The container's id. */
    String containerId() {
        return containerId;
    }

    private static byte[] random() {
        byte[] bytes = new byte[24];
        new SecureRandom().nextBytes(bytes);
        return bytes;
    }

    /** Bytes of a quantity as Kubernetes writes it ({@code 512Mi}, {@code 1G}, {@code 1073741824}). */
    static long bytes(String quantity) {
        Matcher m = QUANTITY.matcher(quantity.trim());
        if (!m.matches()) {
            throw new IllegalArgumentException("memory \"" + quantity + "\" is not a quantity like 512Mi or 2G");
        }
        double n = Double.parseDouble(m.group(1));
        String unit = m.group(2).toUpperCase(Locale.ROOT);
        int power = unit.isEmpty() ? 0 : "KMGT".indexOf(unit.charAt(0)) + 1;
        double base = unit.endsWith("I") ? 1024 : 1000;
        return (long) (n * Math.pow(base, power));
    }

    /** Nano-CPUs of a CPU quantity ({@code 500m}, {@code 2}, {@code 1.5}). */
    static long nanoCpus(String cpu) {
        String c = cpu.trim();
        try {
            return c.endsWith("m")
                    ? Long.parseLong(c.substring(0, c.length() - 1)) * 1_000_000L
                    : (long) (Double.parseDouble(c) * 1_000_000_000L);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("cpu \"" + cpu + "\" is not a quantity like 500m or 2", e);
        }
    }

    private static String logs(DockerClient docker, String id) {
        StringBuilder out = new StringBuilder();
        try {
            docker.logContainerCmd(id)
                    .withStdOut(true)
                    .withStdErr(true)
                    .withTail(40)
                    .exec(new ResultCallback.Adapter<Frame>() {
                        @Override
                        public void onNext(Frame frame) {
                            out.append(new String(frame.getPayload(), java.nio.charset.StandardCharsets.UTF_8));
                        }
                    })
                    .awaitCompletion();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            out.append("(no logs: ").append(e.getMessage()).append(')');
        }
        return out.toString().strip();
    }

    @Override
    public ExecResult run(String commandLine) {
        try (CodeProcess process = exec(List.of("sh", "-c", commandLine))) {
            return process.collect();
        }
    }

    /** A program started by the engine in the container, in the working directory, its output as the engine sends it. */
    @Override
    public CodeProcess exec(List<String> argv) {
        List<String> execEnv = new ArrayList<>();
        env.forEach((k, v) -> execEnv.add(k + "=" + v));
        String execId = docker.execCreateCmd(containerId)
                .withCmd(argv.toArray(String[]::new))
                .withWorkingDir(workdir)
                .withEnv(execEnv)
                .withAttachStdout(true)
                .withAttachStderr(true)
                .exec()
                .getId();
        // the engine's exec API cannot kill an exec: closing detaches from it (the container's removal ends it)
        java.util.concurrent.atomic.AtomicReference<java.io.Closeable> stream =
                new java.util.concurrent.atomic.AtomicReference<>();
        CodeProcess.Feed feed = CodeProcess.feed(() -> {
            try {
                java.io.Closeable s = stream.get();
                if (s != null) {
                    s.close();
                }
            } catch (IOException e) {
                // closed already
            }
        });
        stream.set(docker.execStartCmd(execId).exec(new ResultCallback.Adapter<Frame>() {
            @Override
            public void onNext(Frame frame) {
                byte[] payload = frame.getPayload();
                if (frame.getStreamType() == StreamType.STDERR) {
                    feed.stderr(payload, payload.length);
                } else {
                    feed.stdout(payload, payload.length);
                }
            }

            // the exit goes on the feed before the adapter's own completion, which interrupts this thread
            @Override
            public void onComplete() {
                feed.exited(exitCode(execId), OptionalInt.empty());
                super.onComplete();
            }

            @Override
            public void onError(Throwable error) {
                byte[] message = ("the Docker engine ended the command's stream: " + error.getMessage() + "\n")
                        .getBytes(java.nio.charset.StandardCharsets.UTF_8);
                feed.stderr(message, message.length);
                feed.exited(OptionalInt.empty(), OptionalInt.of(9));
                super.onError(error);
            }
        }));
        return feed.process();
    }

    /** The exec's exit code; the engine may close the stream a moment before it records the exit. */
    private OptionalInt exitCode(String execId) {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (true) {
            var inspected = docker.inspectExecCmd(execId).exec();
            Long code = inspected.getExitCodeLong();
            if (!Boolean.TRUE.equals(inspected.isRunning()) && code != null) {
                return OptionalInt.of(code.intValue());
            }
            if (System.nanoTime() > deadline) {
                return OptionalInt.empty();
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return OptionalInt.empty();
            }
        }
    }

    private static void remove(DockerClient docker, String id) {
        try {
            docker.removeContainerCmd(id)
                    .withForce(true)
                    .withRemoveVolumes(true)
                    .exec();
        } catch (NotFoundException e) {
            // gone already
        }
    }

    private static void close(DockerClient docker) {
        try {
            docker.close();
        } catch (IOException e) {
            // nothing held
        }
    }

    /** Shuts the kernel down and removes the container. */
    @Override
    public void close() {
        try {
            runner.close();
        } finally {
            try {
                remove(docker, containerId);
            } finally {
                close(docker);
            }
        }
    }
}
