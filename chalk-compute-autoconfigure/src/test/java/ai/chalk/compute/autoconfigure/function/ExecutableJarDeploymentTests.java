package ai.chalk.compute.autoconfigure.function;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.function.deploy.CodeSnapshot;
import ai.chalk.compute.function.remote.RemoteFunction;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersion;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionRequest;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.Authentication;
import com.acme.fatjar.app.FatJarApp;
import com.acme.fatjar.config.SalutationAutoConfiguration;
import io.grpc.ManagedChannel;
import io.grpc.inprocess.InProcessChannelBuilder;
import java.io.File;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.loader.tools.Layouts;
import org.springframework.boot.loader.tools.Library;
import org.springframework.boot.loader.tools.LibraryScope;
import org.springframework.boot.loader.tools.Repackager;

/**
 * A Spring application packaged as the Boot Maven plugin packages it and run with {@code java -jar app.jar} (Boot's
 * launcher, its classes and libraries nested in the jar) deploys its function to a real server; the server's worker
 * boots the application in {@code spring:} mode from the deployed code, on a plain class path, and serves a call.
 */
class ExecutableJarDeploymentTests {

    @TempDir
    Path dir;

    @Test
    void anApplicationRunWithJavaJarDeploysFunctionsItsWorkersBootWithoutTheLauncher() throws Exception {
        Path jar = executableJar();
        try (ComputeServer server = ComputeServer.builder()
                .dataDir(Files.createDirectories(dir.resolve("data")))
                .port(0)
                .auth(Authentication.Mode.NONE)
                .build()
                .start()) {
            // deploy-only: the application deploys its functions, prints a summary and exits 0 when all deployed
            Run app = java(List.of(
                    "-jar",
                    jar.toString(),
                    "--chalk.compute.target=127.0.0.1:" + server.port().orElseThrow(),
                    "--chalk.compute.embedded.enabled=false",
                    "--chalk.compute.functions.deploy-only=true",
                    "--chalk.compute.functions.wait-timeout=180s",
                    "--chalk.compute.tui=false",
                    "--spring.main.web-application-type=none"));
            assertThat(app.status()).as(app.output()).isZero();

            ManagedChannel channel =
                    InProcessChannelBuilder.forName(server.inProcessName()).build();
            try (SandboxClient client = SandboxClient.forChannel(channel)) {
                ExternalFunctionVersion version = ExternalFunctionCatalogServiceGrpc.newBlockingStub(channel)
                        .getExternalFunction(GetExternalFunctionRequest.newBuilder()
                                .setFunctionName("shout")
                                .build())
                        .getExternalFunction()
                        .getCurrentVersion();
                Map<String, String> options = version.getConfig().getOptionsMap();
                // under the launcher the application class is still found, and the code is the expanded jar
                assertThat(options).containsEntry("chalk_compute.worker", "spring:" + FatJarApp.class.getName());
                try (CodeSnapshot expanded = CodeSnapshot.of(List.of(jar))) {
                    assertThat(options).containsEntry("chalk_compute.code", expanded.digest());
                }
                // "Hey" is the application's property, read by its own auto-configuration (registered at the jar's
                // root): the worker booted the application with its classes, resources and META-INF
                assertThat(RemoteFunction.fromName(client, "shout").call("ada")).isEqualTo("Hey, ADA!");
            } finally {
                channel.shutdownNow();
            }
        }
    }

    /**
     * The application as {@code spring-boot:repackage} makes it: {@code com.acme.fatjar} with its
     * {@code application.properties} and auto-configuration registration, and every jar of this test's class path
     * (the project's own modules, directories here, jarred first) as its libraries.
     */
    private Path executableJar() throws IOException {
        Path testClasses = location(FatJarApp.class);
        Path classes = dir.resolve("app/target/classes");
        Path fatjar = testClasses.resolve("com/acme/fatjar");
        try (Stream<Path> walk = Files.walk(fatjar)) {
            for (Path p : walk.filter(Files::isRegularFile).toList()) {
                Path target = classes.resolve(testClasses.relativize(p).toString());
                Files.createDirectories(target.getParent());
                Files.copy(p, target);
            }
        }
        Files.writeString(classes.resolve("application.properties"), "fatjar.salutation=Hey\n");
        Path imports =
                classes.resolve("META-INF/spring/org.springframework.boot.autoconfigure.AutoConfiguration.imports");
        Files.createDirectories(imports.getParent());
        Files.writeString(imports, SalutationAutoConfiguration.class.getName() + "\n");

        List<Path> libraries = new ArrayList<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path path = Path.of(entry).toAbsolutePath().normalize();
            if (path.equals(testClasses) || !Files.exists(path)) {
                continue;
            }
            if (Files.isDirectory(path)) {
                // target/classes of a module of this build: packaged as Maven would package it
                String module = path.getParent().getParent().getFileName() + "-" + path.getFileName();
                libraries.add(jar(path, dir.resolve("libs/" + module + ".jar")));
            } else {
                libraries.add(path);
            }
        }
        Path plain = jar(classes, dir.resolve("app/target/app.jar.original"));
        Path executable = dir.resolve("app/target/app.jar");
        Repackager repackager = new Repackager(plain.toFile());
        repackager.setMainClass(FatJarApp.class.getName());
        repackager.setLayout(new Layouts.Jar());
        repackager.repackage(executable.toFile(), callback -> {
            for (Path library : libraries) {
                callback.library(new Library(library.toFile(), LibraryScope.RUNTIME));
            }
        });
        return executable;
    }

    /** A jar of a directory's files and directories. */
    private static Path jar(Path directory, Path jar) throws IOException {
        Manifest manifest = new Manifest();
        manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        Files.createDirectories(jar.getParent());
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar), manifest);
                Stream<Path> walk = Files.walk(directory)) {
            for (Path p : walk.filter(p -> !p.equals(directory)).sorted().toList()) {
                String name = directory.relativize(p).toString().replace(File.separatorChar, '/');
                if (name.equals("META-INF/MANIFEST.MF")) {
                    continue;
                }
                out.putNextEntry(new JarEntry(Files.isDirectory(p) ? name + "/" : name));
                if (Files.isRegularFile(p)) {
                    Files.copy(p, out);
                }
                out.closeEntry();
            }
        }
        return jar;
    }

    private record Run(int status, String output) {}

    /** Runs a JVM, with no CHALK_ environment of this one's, until it exits (killed after 4 minutes). */
    private Run java(List<String> arguments) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(arguments);
        Path log = dir.resolve("app.log");
        ProcessBuilder builder =
                new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        builder.environment().keySet().removeIf(name -> name.startsWith("CHALK_"));
        Process process = builder.start();
        if (!process.waitFor(240, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor();
        }
        return new Run(process.exitValue(), Files.readString(log));
    }

    private static Path location(Class<?> type) {
        try {
            return Path.of(type.getProtectionDomain()
                            .getCodeSource()
                            .getLocation()
                            .toURI())
                    .toAbsolutePath()
                    .normalize();
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }
}
