package ai.chalk.compute.server.runtime.local;

import static ai.chalk.compute.server.runtime.local.LocalTesting.sh;
import static ai.chalk.compute.server.runtime.local.LocalTesting.spec;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import ai.chalk.compute.server.runtime.host.Procfs;
import ai.chalk.compute.server.runtime.host.SandboxHostname;
import ai.chalk.compute.server.runtime.local.cgroup.SandboxCgroup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Sandboxes started ahead of time: a create of a recently created spec is a hand-over, and what it hands over cannot
 * be told from a fresh sandbox (its own id, host name, environment, fresh writable layer, limits, nothing left over),
 * is never handed out twice, and ends with the runtime.
 */
class SandboxPoolTest {

    private static final Duration WARM_UP = Duration.ofSeconds(60);

    @TempDir
    Path state;

    LocalRuntime runtime;

    private LocalRuntime runtime(int poolSize, int maxSandboxes) {
        SandboxDefaults d = SandboxDefaults.STANDARD;
        runtime = LocalRuntime.builder(state)
                .poolSize(poolSize)
                .defaults(
                        new SandboxDefaults(d.memoryBytes(), d.layerBytes(), d.pidsMax(), d.openFiles(), maxSandboxes))
                .build();
        return runtime;
    }

    @AfterEach
    void stop() {
        if (runtime != null) {
            runtime.close();
        }
    }

    /** Creates one sandbox of {@code limits} (the spec is wanted from now on) and waits for the pool to fill. */
    private void warm(ResourceLimits limits, int expected) throws Exception {
        runtime.start(spec(Map.of(), limits)).terminate(Duration.ZERO);
        try {
            await().atMost(WARM_UP).until(() -> runtime.pooledSandboxes() == expected);
        } catch (ConditionTimeoutException e) {
            // once seen in CI (not reproduced): what the pool was doing, for the next time (its failures are in the
            // test's output, logged at debug)
            throw new AssertionError(
                    "the pool holds " + runtime.pooledSandboxes() + " sandboxes, not " + expected + " (isolation "
                            + runtime.level() + "); its filler thread: " + fillerThread(),
                    e);
        }
    }

    private static String fillerThread() {
        return Thread.getAllStackTraces().entrySet().stream()
                .filter(t -> t.getKey().getName().startsWith("chalk-local-pool"))
                .map(t -> t.getKey().getName() + " " + t.getKey().getState() + " at " + Arrays.toString(t.getValue()))
                .findFirst()
                .orElse("none");
    }

    /** The names of a sandbox's processes, sorted, without the spare exec helpers a sandbox in use keeps anyway. */
    private static List<String> comms(String out) {
        // a spare helper on its way in is nsenter, then setpriv, then perl, which names itself chalk-seccomp while it
        // installs the filter and chalk-exec-spare (cut to 15 characters) once it waits
        Set<String> spare = Set.of("nsenter", "setpriv", "perl", "chalk-seccomp", "chalk-exec-spar");
        return out.lines().filter(c -> !spare.contains(c)).sorted().toList();
    }

    private static boolean fromPool(RuntimeSandbox sb) {
        return ((LocalSandbox) sb).name().startsWith("_pool-");
    }

    @Test
    void aCreateOfARecentlyCreatedSpecIsAHandOverAndThePoolRefills() throws Exception {
        runtime(2, 100);
        assertThat(runtime.pooledSandboxes()).isZero();
        RuntimeSandbox first = runtime.start(spec());
        assertThat(fromPool(first))
                .as("the first create of a spec takes the normal path")
                .isFalse();
        await().atMost(WARM_UP).until(() -> runtime.pooledSandboxes() == 2);

        RuntimeSandbox second = runtime.start(spec());
        assertThat(fromPool(second)).isTrue();
        assertThat(sh(second, "echo hi").ok().out()).isEqualTo("hi\n");
        // its state directory is found under its id, as every sandbox's is
        Path byId = runtime.sandboxesDir().resolve(second.id());
        sh(second, "echo mark > /workspace/mark").ok();
        assertThat(byId.resolve("root/workspace/mark")).hasContent("mark");
        await().atMost(WARM_UP).until(() -> runtime.pooledSandboxes() == 2);
        // a reconcile removes leftovers, never a handed-over sandbox's state or the pool's
        runtime.reconcile(List.of());
        assertThat(sh(second, "echo still").ok().out()).isEqualTo("still\n");
        assertThat(runtime.pooledSandboxes()).isEqualTo(2);
        RuntimeSandbox third = runtime.start(spec());
        assertThat(fromPool(third)).isTrue();
        assertThat(sh(third, "echo hi").ok().out()).isEqualTo("hi\n");
        third.terminate(Duration.ZERO);
        first.terminate(Duration.ZERO);
        second.terminate(Duration.ZERO);
        assertThat(byId).doesNotExist();
        assertThat(Files.isSymbolicLink(byId)).isFalse();
    }

    @Test
    void aHandedOverSandboxHasItsOwnIdHostNameEnvironmentAndAFreshLayer() throws Exception {
        runtime(2, 100);
        warm(ResourceLimits.NONE, 2);
        SandboxSpec spec = spec(Map.of("API_TOKEN", "s3cr3t-value", "GREETING", "hello"), ResourceLimits.NONE);
        LocalSandbox a = (LocalSandbox) runtime.start(spec);
        assertThat(fromPool(a)).isTrue();
        assertThat(a.id()).isEqualTo(spec.id());
        assertThat(sh(a, "hostname").ok().out().trim()).isEqualTo(SandboxHostname.of(spec.id()));
        assertThat(sh(a, "echo $API_TOKEN $GREETING $HOME $PWD").ok().out())
                .isEqualTo("s3cr3t-value hello /root /workspace\n");
        // nothing but what a fresh sandbox has: the same listing of its writable places, no process but ours
        // a spec not created before takes the normal path: a fresh sandbox to compare with
        LocalSandbox fresh = (LocalSandbox)
                runtime.start(spec(Map.of(), new ResourceLimits(Optional.empty(), Optional.of(512L << 20))));
        assertThat(fromPool(fresh)).isFalse();
        SandboxSpec withVolume = new SandboxSpec(
                LocalTesting.newId(),
                "",
                Map.of(),
                "/workspace",
                ResourceLimits.NONE,
                false,
                List.of(),
                List.of(new SandboxSpec.VolumeBinding(Files.createDirectories(state.resolve("vol")), "/data", true)),
                Optional.empty());
        RuntimeSandbox volume = runtime.start(withVolume);
        assertThat(fromPool(volume))
                .as("a spec with a volume never comes from the pool")
                .isFalse();
        volume.terminate(Duration.ZERO);
        String listing = "ls -la /tmp /var/tmp /root /workspace | sed 's/ [A-Z][a-z][a-z] .* / /'";
        assertThat(sh(a, listing).ok().out()).isEqualTo(sh(fresh, listing).ok().out());
        // the same processes as in a fresh sandbox: the init, its sleep, this shell
        String processes = "for p in /proc/[0-9]*; do read c < $p/comm; echo $c; done";
        assertThat(comms(sh(a, processes).ok().out()))
                .isEqualTo(comms(sh(fresh, processes).ok().out()));
        // what one handed-over sandbox writes, the next does not see
        sh(a, "echo mine > /tmp/left-over && echo mine > /workspace/left-over && mkdir /root/x")
                .ok();
        // two of each spec created lately
        await().atMost(WARM_UP).until(() -> runtime.pooledSandboxes() == 4);
        LocalSandbox b = (LocalSandbox) runtime.start(spec());
        assertThat(fromPool(b)).isTrue();
        assertThat(sh(b, "ls -A /tmp /workspace /root; hostname; echo \"[$API_TOKEN]\"")
                        .ok()
                        .out())
                .doesNotContain("left-over")
                .doesNotContain("x\n")
                .contains(SandboxHostname.of(b.id()))
                .contains("[]");
        assertThat(b.layer()).isNotEqualTo(a.layer());
        assertThat(b.initPid()).isNotEqualTo(a.initPid());
        a.terminate(Duration.ZERO);
        b.terminate(Duration.ZERO);
        fresh.terminate(Duration.ZERO);
    }

    @Test
    void aHandedOverSandboxHasItsSpecsLimitsAndSpecsOfOtherLimitsTakeTheirOwnPool() throws Exception {
        runtime(1, 100);
        ResourceLimits small = new ResourceLimits(Optional.of(500L), Optional.of(64L * 1024 * 1024));
        warm(small, 1);
        LocalSandbox other = (LocalSandbox) runtime.start(spec());
        assertThat(fromPool(other))
                .as("no pooled sandbox has the default limits yet")
                .isFalse();
        LocalSandbox sb = (LocalSandbox) runtime.start(spec(Map.of(), small));
        assertThat(fromPool(sb)).isTrue();
        SandboxCgroup groups = sb.groups().orElseThrow();
        assertThat(Files.readString(groups.dir("memory").orElseThrow().resolve("memory.limit_in_bytes"))
                        .trim())
                .isEqualTo(Long.toString(64L * 1024 * 1024));
        assertThat(Files.readString(groups.dir("cpu").orElseThrow().resolve("cpu.cfs_quota_us"))
                        .trim())
                .isEqualTo("50000");
        // and they hold: a shell that needs 100 MB is killed by the kernel
        LocalTesting.Run hog = sh(sb, "x=$(head -c 100000000 /dev/zero | tr '\\0' a); echo survived");
        assertThat(hog.out()).doesNotContain("survived");
        assertThat(hog.status().exitCode()).hasValue(137);
        sb.terminate(Duration.ZERO);
        other.terminate(Duration.ZERO);
        assertThat(groups.dir("memory").orElseThrow()).doesNotExist();
    }

    @Test
    void concurrentCreatesNeverGetTheSameSandbox() throws Exception {
        runtime(2, 100);
        warm(ResourceLimits.NONE, 2);
        int creates = 6;
        ExecutorService callers = Executors.newFixedThreadPool(creates);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<LocalSandbox>> futures = new ArrayList<>();
        try {
            for (int i = 0; i < creates; i++) {
                futures.add(callers.submit((Callable<LocalSandbox>) () -> {
                    go.await();
                    return (LocalSandbox) runtime.start(spec());
                }));
            }
            go.countDown();
            List<LocalSandbox> all = new ArrayList<>();
            for (Future<LocalSandbox> f : futures) {
                all.add(f.get());
            }
            assertThat(all.stream().filter(SandboxPoolTest::fromPool)).isNotEmpty();
            assertThat(all.stream().map(LocalSandbox::initPid).distinct()).hasSize(creates);
            assertThat(all.stream().map(LocalSandbox::name).distinct()).hasSize(creates);
            Set<String> hostnames = new HashSet<>();
            for (LocalSandbox sb : all) {
                hostnames.add(sh(sb, "hostname").ok().out().trim());
            }
            assertThat(hostnames).hasSize(creates);
            all.forEach(sb -> sb.terminate(Duration.ZERO));
        } finally {
            callers.shutdownNow();
        }
    }

    @Test
    void aDuplicateIdIsRefusedAndLeavesThePooledSandboxForTheNextCreate() throws Exception {
        runtime(1, 100);
        warm(ResourceLimits.NONE, 1);
        RuntimeSandbox a = runtime.start(spec());
        await().atMost(WARM_UP).until(() -> runtime.pooledSandboxes() == 1);
        SandboxSpec again = new SandboxSpec(a.id(), "", Map.of(), "/workspace", ResourceLimits.NONE, false, List.of());
        assertThatThrownBy(() -> runtime.start(again))
                .isInstanceOf(RuntimeStartException.class)
                .hasMessageContaining("already running");
        assertThat(runtime.pooledSandboxes()).isEqualTo(1);
        RuntimeSandbox b = runtime.start(spec());
        assertThat(fromPool(b)).isTrue();
        a.terminate(Duration.ZERO);
        b.terminate(Duration.ZERO);
    }

    @Test
    void pooledSandboxesGiveTheirPlacesToCreates() throws Exception {
        runtime(2, 4);
        warm(ResourceLimits.NONE, 2);
        List<RuntimeSandbox> mine = new ArrayList<>();
        // another spec: four places, two held by the pool for a spec no one creates now
        ResourceLimits other = new ResourceLimits(Optional.empty(), Optional.of(256L << 20));
        for (int i = 0; i < 4; i++) {
            mine.add(runtime.start(spec(Map.of(), other)));
        }
        assertThat(mine.stream().map(sb -> ((LocalSandbox) sb).initPid()).distinct())
                .hasSize(4);
        assertThat(runtime.pooledSandboxes()).isZero();
        assertThatThrownBy(() -> runtime.start(spec(Map.of(), other)))
                .isInstanceOf(RuntimeStartException.class)
                .hasMessageContaining("at most 4 sandboxes");
        mine.forEach(sb -> sb.terminate(Duration.ZERO));
    }

    @Test
    void closingTheRuntimeEndsThePooledSandboxesAndLeavesNothing() throws Exception {
        runtime(2, 100);
        warm(ResourceLimits.NONE, 2);
        try (Stream<Path> dirs = Files.list(runtime.sandboxesDir())) {
            List<Path> pooled = dirs.filter(d -> d.getFileName().toString().startsWith("_pool-"))
                    .toList();
            assertThat(pooled).hasSize(2);
        }
        List<Long> inits = runtime.pool().initPids();
        assertThat(inits).hasSize(2).allMatch(Procfs::running);
        runtime.close();
        assertThat(runtime.pooledSandboxes()).isZero();
        try (Stream<Path> dirs = Files.list(state.resolve("sandboxes"))) {
            assertThat(dirs).isEmpty();
        }
        assertThat(inits).noneMatch(Procfs::running);
        runtime = null;
    }

    @Test
    void aPoolOfZeroStartsNothingAhead() throws Exception {
        runtime(0, 100);
        runtime.start(spec()).terminate(Duration.ZERO);
        Thread.sleep(500);
        assertThat(runtime.pooledSandboxes()).isZero();
        RuntimeSandbox sb = runtime.start(spec());
        assertThat(fromPool(sb)).isFalse();
        sb.terminate(Duration.ZERO);
        assertThatThrownBy(() -> LocalRuntime.builder(state).poolSize(-1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("between 0 and 16");
    }
}
