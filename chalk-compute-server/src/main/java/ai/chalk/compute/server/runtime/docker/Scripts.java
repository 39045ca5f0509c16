package ai.chalk.compute.server.runtime.docker;

/** The small POSIX shell programs the docker runtime runs inside containers (any {@code /bin/sh} will do). */
final class Scripts {

    private Scripts() {}

    /** The command the init's keep-alive runs (with the seconds to sleep); recognised (and spared) by terminate. */
    static final String INIT_SLEEP = "sleep";

    /**
     * A container's pid 1, run as {@code sh -c INIT chalk-init [<lifetime seconds>]}: a shell that stays up, reaps
     * every orphan (it waits for any child while its keep-alive sleeps) and cannot be signalled from inside (pid 1 of
     * a namespace ignores signals it has no handler for; TERM, INT and HUP are ignored). With a lifetime it exits once
     * that has passed, by the clock, so the container stops by itself even when no server is left to stop it. The
     * keep-alive is a child, which the sandbox may kill or stop: a stopped child still wakes the init (its CHLD trap
     * ends the wait), which kills it and looks at the clock again; a killed one is replaced.
     */
    static final String INIT = String.join(
            "\n",
            "command -v sleep >/dev/null 2>&1 || { echo 'chalk-compute: the image has no sleep command, which the "
                    + "sandbox init needs' >&2; exit 127; }",
            "trap '' TERM INT HUP",
            "trap : CHLD",
            "end=",
            "if [ -n \"$1\" ]; then",
            "  command -v date >/dev/null 2>&1 || { echo 'chalk-compute: the image has no date command, which the "
                    + "sandbox init needs' >&2; exit 127; }",
            "  end=$(( $(date +%s) + $1 ))",
            "fi",
            "while :; do",
            "  left=3600",
            "  if [ -n \"$end\" ]; then",
            "    now=$(date +%s) || now=0",
            "    [ \"$now\" -lt \"$end\" ] || exit 0",
            "    [ $((end - now)) -lt $left ] && left=$((end - now))",
            "  fi",
            "  sleep $left &",
            "  wait $! || :",
            "  kill -KILL $! 2>/dev/null",
            "done");

    /** First line of an exec's output when its command was started: {@code chalk-exec ok <pid>}. */
    static final String MARK_OK = "chalk-exec ok ";

    static final String MARK_NO_WORKDIR = "chalk-exec nowd";
    static final String MARK_NO_COMMAND = "chalk-exec nocmd";
    /** The command is a file without execute permission: {@code chalk-exec noexec <where it was found>}. */
    static final String MARK_NOT_EXECUTABLE = "chalk-exec noexec ";

    /**
     * The wrapper of every exec, run as {@code sh -c EXEC chalk-exec <workdir> <command> <args...>}: changes to the
     * working directory and looks the command up on the exec's PATH exactly as the local runtime does (a missing one,
     * or a file without execute permission, is a start error, not an exit code), prints its own pid, waits for one line (or end-of-file) on stdin, the go
     * ahead the runtime gives once it has put the process into its exec group and sized its terminal, and becomes
     * the command. So the pid it printed is the command's pid, and nothing the command starts can escape the group.
     */
    static final String EXEC = String.join(
            "\n",
            "cd -- \"$1\" 2>/dev/null || { echo '" + MARK_NO_WORKDIR + "'; exit 125; }",
            "shift",
            "case $1 in",
            "*/*) if [ ! -f \"$1\" ]; then echo '" + MARK_NO_COMMAND + "'; exit 127; fi",
            "     [ -x \"$1\" ] || { printf '%s%s\\n' '" + MARK_NOT_EXECUTABLE + "' \"$1\"; exit 126; } ;;",
            "*) chalk_p=\"$PATH:\" chalk_f= chalk_n=",
            "   while [ -n \"$chalk_p\" ]; do",
            "     chalk_d=${chalk_p%%:*} chalk_p=${chalk_p#*:}",
            "     if [ -n \"$chalk_d\" ] && [ -f \"$chalk_d/$1\" ]; then",
            "       if [ -x \"$chalk_d/$1\" ]; then chalk_f=1; break; fi",
            "       [ -n \"$chalk_n\" ] || chalk_n=$chalk_d/$1",
            "     fi",
            "   done",
            "   if [ -z \"$chalk_f\" ]; then",
            "     [ -z \"$chalk_n\" ] || { printf '%s%s\\n' '" + MARK_NOT_EXECUTABLE + "' \"$chalk_n\"; exit 126; }",
            "     echo '" + MARK_NO_COMMAND + "'; exit 127",
            "   fi",
            "   unset chalk_p chalk_f chalk_d chalk_n ;;",
            "esac",
            "echo \"" + MARK_OK + "$$\"",
            "read -r chalk_go || :",
            "unset chalk_go",
            // the exec's processes go before the container's init when its memory runs out (see the local runtime's
            // SandboxCommands.EXEC_OOM_SCORE_ADJ): a second kill right after the first once took the init
            "{ echo 500 > /proc/self/oom_score_adj; } 2>/dev/null",
            "exec \"$@\"");

    /**
     * Kills a process and its descendants inside the container, for engines whose processes this host cannot see:
     * stops the tree first so that nobody forks meanwhile, then kills it. Processes that left the tree (re-parented
     * daemons) are not found this way.
     */
    static final String KILL_TREE = String.join(
            "\n",
            "all=\" $1 \"",
            "kill -STOP \"$1\" 2>/dev/null",
            "changed=1",
            "while [ $changed = 1 ]; do",
            "  changed=0",
            "  for s in /proc/[0-9]*/status; do",
            "    pid=${s#/proc/}; pid=${pid%/status}",
            "    case $all in *\" $pid \"*) continue ;; esac",
            "    pp=",
            "    { while read -r k v; do if [ \"$k\" = PPid: ]; then pp=$v; break; fi; done < \"$s\"; } 2>/dev/null",
            "    case $all in *\" $pp \"*) kill -STOP \"$pid\" 2>/dev/null; all=\"$all$pid \"; changed=1 ;; esac",
            "  done",
            "done",
            "kill -KILL $all 2>/dev/null",
            "exit 0");

    /**
     * Sends signal {@code $1} (a number) to pid {@code $2} (-1: every process but the init and this shell). No
     * {@code --}: dash's {@code kill} takes it for a pid.
     */
    static final String KILL = "kill -$1 $2";
}
