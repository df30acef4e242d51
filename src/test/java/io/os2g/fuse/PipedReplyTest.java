package io.os2g.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** What waits for a reply's pipe to let go of file pages runs when the pipe does, once. */
@Tag("unit")
class PipedReplyTest {

    @Test
    void whatWaitsForAReplyRunsWhenItIsDroppedOnceEachEvenIfOneThrows() {
        List<String> ran = new ArrayList<>();
        try (PipedReply reply = new PipedReply(-1, null, 4096)) {
            reply.start(1);
            reply.whenDone(() -> ran.add("no reply begun: at once"));
            assertEquals(List.of("no reply begun: at once"), ran);

            reply.begin(0);
            IllegalStateException broken = new IllegalStateException("a release that failed");
            reply.whenDone(() -> {
                ran.add("first");
                throw broken;
            });
            reply.whenDone(() -> ran.add("second"));
            assertEquals(1, ran.size(), "nothing more while the pipe may refer to pages");
            assertSame(broken, assertThrows(IllegalStateException.class, reply::restart));
            assertEquals(List.of("no reply begun: at once", "first", "second"), ran);

            reply.start(2);
            reply.begin(0);
            reply.whenDone(() -> ran.add("third"));
        }
        assertEquals(List.of("no reply begun: at once", "first", "second", "third"), ran, "closing the pipe lets it go too; none ran twice");
    }
}
