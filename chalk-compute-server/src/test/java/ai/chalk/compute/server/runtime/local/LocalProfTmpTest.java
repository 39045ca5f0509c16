package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.*;
import java.nio.file.Path;
import java.util.*;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LocalProfTmpTest {
    @Test
    void prof(@TempDir Path state) throws Exception {
        try (LocalRuntime rt = new LocalRuntime(state, LocalIsolation.AUTO)) {
            LocalSandbox sb = (LocalSandbox) rt.start(LocalTesting.spec());
            long pid1 = sb.initPid();
            List<String> chainNoCg = SandboxCommands.nsenterExec(rt.tools(), pid1, false, null, Map.of("PATH", LocalRuntime.DEFAULT_PATH), "true", List.of());
            Cgroups.ExecGroup g = sb.groups().get().newExec();
            List<String> chainCg = SandboxCommands.joinCgroups(g.procsFiles(), chainNoCg);
            for (int round = 0; round < 3; round++) {
                System.out.printf("raw true %.2f  raw chain %.2f  raw chain+cg %.2f%n", raw(List.of("/bin/true")), raw(chainNoCg), raw(chainCg));
                long[] execCall = new long[60], toExit = new long[60];
                for (int i = 0; i < 60; i++) {
                    long t0 = System.nanoTime();
                    RuntimeProcess p = sb.exec(LocalTesting.command("true"));
                    long t1 = System.nanoTime();
                    p.stdin().close();
                    p.stdout().readAllBytes(); p.stderr().readAllBytes();
                    p.onExit().get();
                    long t2 = System.nanoTime();
                    execCall[i] = t1 - t0; toExit[i] = t2 - t0;
                }
                Arrays.sort(execCall); Arrays.sort(toExit);
                System.out.printf("exec() call p50 %.2f   exec to onExit p50 %.2f%n", execCall[30] / 1e6, toExit[30] / 1e6);
            }
        }
    }

    static double raw(List<String> cmd) throws Exception {
        long[] t = new long[60];
        for (int i = 0; i < 60; i++) {
            long s = System.nanoTime();
            ProcessBuilder pb = new ProcessBuilder(cmd); pb.environment().clear(); pb.environment().put("PATH", LocalRuntime.DEFAULT_PATH);
            Process p = pb.start(); p.getOutputStream().close(); p.getInputStream().readAllBytes(); p.getErrorStream().readAllBytes(); p.waitFor();
            t[i] = System.nanoTime() - s;
        }
        Arrays.sort(t);
        return t[30] / 1e6;
    }
}
