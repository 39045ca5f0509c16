package ai.chalk.compute.server.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Lines of a tenant's output, each held only up to the bound: a process writing without a line break made the server
 * hold everything it wrote (here, a real child process writing 1 GiB of zeros with no line break).
 */
class OutputLinesTest {

    @Test
    void linesAreSplitOnEitherBreakAndTheLastOneWithoutABreakIsKept() throws Exception {
        List<String> lines = new ArrayList<>();
        OutputLines.forEach(in("one\ntwo\r\n\nthree"), 100, lines::add);
        assertThat(lines).containsExactly("one", "two", "", "three");
    }

    @Test
    void aLoneCarriageReturnEndsALineAsReadLineHasItAndALineOfExactlyTheBoundIsWhole() throws Exception {
        List<String> lines = new ArrayList<>();
        OutputLines.forEach(in("10%\r50%\r100%\n" + "y".repeat(100) + "\n"), 100, lines::add);
        assertThat(lines).containsExactly("10%", "50%", "100%", "y".repeat(100));
    }

    @Test
    void aCutNeverSplitsACharacter() throws Exception {
        List<String> lines = new ArrayList<>();
        OutputLines.forEach(in("x".repeat(99) + "\uD83D\uDE00" + "tail\n"), 100, lines::add);
        assertThat(lines).containsExactly("x".repeat(99) + OutputLines.CUT);
    }

    @Test
    void aLongLineIsCutAtTheBoundAndTheRestOfItDropped() throws Exception {
        List<String> lines = new ArrayList<>();
        OutputLines.forEach(in("x".repeat(250) + "\nnext\n"), 100, lines::add);
        assertThat(lines).containsExactly("x".repeat(100) + OutputLines.CUT, "next");
    }

    @Test
    void aGigabyteWithoutALineBreakIsReadWithinTheBound() throws Exception {
        Process p = new ProcessBuilder("head", "-c", Long.toString(1L << 30), "/dev/zero").start();
        List<Integer> lengths = new ArrayList<>();
        try (InputStream out = p.getInputStream()) {
            OutputLines.forEach(out, OutputLines.MAX_CHARS, line -> lengths.add(line.length()));
        }
        assertThat(p.waitFor()).isZero();
        // one line, cut at the bound: what was held meanwhile is a line's bound, not a gigabyte
        assertThat(lengths).containsExactly(OutputLines.MAX_CHARS + OutputLines.CUT.length());
    }

    private static InputStream in(String text) {
        return new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8));
    }
}
