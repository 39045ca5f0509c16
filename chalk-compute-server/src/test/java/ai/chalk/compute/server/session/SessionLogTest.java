package ai.chalk.compute.server.session;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.sandbox.v2.OpenSessionResponse;
import ai.chalk.compute.proto.sandbox.v2.OutputData;
import ai.chalk.compute.proto.sandbox.v2.ProcessExited;
import com.google.protobuf.ByteString;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class SessionLogTest {

    private static OpenSessionResponse output(String text) {
        return OpenSessionResponse.newBuilder()
                .setOutputData(OutputData.newBuilder()
                        .setStream(OutputData.Stream.STREAM_STDOUT)
                        .setData(ByteString.copyFromUtf8(text)))
                .build();
    }

    private static final OpenSessionResponse EXITED = OpenSessionResponse.newBuilder()
            .setProcessExited(ProcessExited.getDefaultInstance())
            .build();

    @Test
    void aChunkLargerThanTheBufferKeepsItsTailAfterTheProcessEnds() {
        // the CI failure this guards: a 256 KiB read ending in "done\n" vanished when the exit event came
        SessionLog log = new SessionLog(16);
        log.append(output("early"), false);
        char[] zeros = new char[100];
        Arrays.fill(zeros, '0');
        log.append(output(new String(zeros) + "done\n"), false);
        log.append(EXITED, true);

        SessionLog.Next first = log.next(0);
        assertThat(first).isInstanceOf(SessionLog.Gap.class);
        SessionLog.Gap gap = (SessionLog.Gap) first;
        assertThat(gap.bytes()).isEqualTo(5 + 105 - 16);
        SessionLog.Next kept = log.next(gap.lastSeq());
        assertThat(kept).isInstanceOf(SessionLog.Event.class);
        SessionLog.Entry entry = ((SessionLog.Event) kept).entry();
        assertThat(entry.event().getOutputData().getData().toString(StandardCharsets.UTF_8))
                .hasSize(16)
                .endsWith("done\n");
        SessionLog.Entry last = ((SessionLog.Event) log.next(entry.seq())).entry();
        assertThat(last.event().hasProcessExited()).isTrue();
        assertThat(log.bufferedBytes()).isEqualTo(16);
        assertThat(log.droppedBytes()).isEqualTo(gap.bytes());
    }

    @Test
    void smallChunksDropTheOldestWhole() {
        SessionLog log = new SessionLog(8);
        log.append(output("aaaa"), false);
        log.append(output("bbbb"), false);
        log.append(output("cccc"), false);
        log.append(EXITED, true);

        SessionLog.Gap gap = (SessionLog.Gap) log.next(0);
        assertThat(gap.firstSeq()).isEqualTo(1);
        assertThat(gap.lastSeq()).isEqualTo(1);
        assertThat(gap.bytes()).isEqualTo(4);
        SessionLog.Entry b = ((SessionLog.Event) log.next(1)).entry();
        assertThat(b.event().getOutputData().getData().toStringUtf8()).isEqualTo("bbbb");
        assertThat(log.finished()).isTrue();
    }

    @Test
    void outputAfterTheEndIsNotKept() {
        // a background process the command left holding its output writes on after the exit: the finished session's
        // reservation shrank to what it held, so the log takes nothing more
        SessionLog log = new SessionLog(1024);
        log.append(output("before"), false);
        long exit = log.append(EXITED, true);
        assertThat(log.append(output("after the end"), false)).isEqualTo(exit);
        assertThat(log.bufferedBytes()).isEqualTo(6);
        assertThat(log.lastSeq()).isEqualTo(exit);
        assertThat(log.next(exit)).isNull();
    }
}
