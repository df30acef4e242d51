package io.os2g.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.os2g.link.AgentLink;
import io.os2g.link.OpenRequest;
import io.os2g.link.PrefetchRequest;
import io.os2g.link.ReadRequest;
import io.os2g.metrics.ShimMetrics;
import io.os2g.namespace.Namespace;
import io.os2g.staging.StagingView;
import io.os2g.support.ReferenceStore;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The lines written to /.os2g/prefetch and /.os2g/warm, as the agent receives them. */
@Tag("unit")
class HintWriterTest {

    private static final String MOUNT = "/mnt/data";

    private final ReferenceStore store = new ReferenceStore()
            .put("train/cat/1.jpg", 10).put("train/cat/2.jpg", 20).put("train/dog/3.jpg", 30).put("top.bin", 5);
    private final Namespace namespace = new Namespace(store, "", Duration.ofMinutes(5));
    private final ShimMetrics metrics = new ShimMetrics();
    private final List<PrefetchRequest> sent = new ArrayList<>();

    private final AgentLink link = new AgentLink() {
        @Override
        public long open(OpenRequest request) {
            throw new UnsupportedOperationException();
        }

        @Override
        public CompletableFuture<Void> stage(ReadRequest request) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void hint(ReadRequest request) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void prefetch(PrefetchRequest request) {
            sent.add(request);
        }

        @Override
        public void release(long handle) {
        }

        @Override
        public StagingView staging() {
            throw new UnsupportedOperationException();
        }

        @Override
        public void close() {
        }
    };

    private HintWriter writer(boolean warm, boolean replace) {
        return new HintWriter(namespace, link, metrics, MOUNT, warm, replace);
    }

    private static ByteBuffer bytes(String s) {
        return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
    }

    private List<String> keys() {
        return sent.stream().flatMap(r -> r.files().stream()).map(OpenRequest::key).toList();
    }

    @Test
    void linesSplitAcrossWritesArriveWholeAndInOrder() {
        HintWriter w = writer(false, true);
        w.write(bytes("train/dog/3.j"));
        w.write(bytes("pg\r\n/mnt/data/train/cat/1.jpg\n\n  \n/train//cat/./2.jpg\ntop"));
        w.write(bytes(".bin"));
        assertEquals(List.of("train/dog/3.jpg", "train/cat/1.jpg", "train/cat/2.jpg"), keys(), "the last line waits for its end");
        w.close();
        assertEquals(List.of("train/dog/3.jpg", "train/cat/1.jpg", "train/cat/2.jpg", "top.bin"), keys());
        assertTrue(sent.get(0).replace());
        assertTrue(sent.stream().skip(1).noneMatch(PrefetchRequest::replace), "only the first message replaces");
        assertTrue(sent.stream().noneMatch(PrefetchRequest::warm));
        assertEquals(4, metrics.hintsAccepted());
        assertEquals(0, metrics.hintsRejected());
    }

    @Test
    void linesThatNameNoFileAreSkippedAndCounted() {
        HintWriter w = writer(false, false);
        String overlong = "train/" + "x".repeat(HintWriter.MAX_LINE + 10);
        w.write(bytes(String.join("\n", "train/cat/missing.jpg", "train/cat", "train/../top.bin", "..",
                overlong, "/.os2g/stats", ".os2g/prefetch", "/", "/mnt/other/top.bin", "top.bin/x",
                "train/cat/1.jpg\0", "train/cat/1.jpg") + "\n"));
        w.close();
        assertEquals(List.of("train/cat/1.jpg"), keys());
        assertEquals(1, metrics.hintsAccepted());
        assertEquals(11, metrics.hintsRejected());
        assertFalse(sent.get(0).replace());
    }

    @Test
    void aTruncatingOpenWithNothingWrittenClearsTheHints() {
        writer(false, true).close();
        assertEquals(1, sent.size());
        assertTrue(sent.get(0).replace());
        assertTrue(sent.get(0).files().isEmpty());

        sent.clear();
        writer(false, false).close();
        assertTrue(sent.isEmpty(), "an appending open with nothing written sends nothing");
    }

    @Test
    void longListsGoOutInBatchesWhileStillBeingWritten() {
        StringBuilder lines = new StringBuilder();
        for (int i = 0; i < 1000; i++) {
            store.put("many/" + i, 1);
            lines.append("many/").append(i).append('\n');
        }
        HintWriter w = writer(true, false);
        w.write(bytes(lines.toString()));
        assertEquals(1000, keys().size());
        assertTrue(sent.size() >= 4, "batches, not one message: " + sent.size());
        assertTrue(sent.stream().allMatch(PrefetchRequest::warm));
        assertEquals("many/0", keys().get(0));
        assertEquals("many/999", keys().get(999));
        w.close();
    }
}
