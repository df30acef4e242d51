package io.os2g.staging;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.channels.Channels;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An agent's index mirrored into a host's region, with the link in between played by the test: posts
 * and recalls are delivered when the test says, so each step of the exchange is seen.
 */
@Tag("unit")
class PostedRegionTest {

    private static final int PAGE = 64 * 1024;
    private static final long CAPACITY = 8L * PAGE;

    @TempDir
    Path tmp;

    private final List<AutoCloseable> open = new ArrayList<>();

    /** What the agent's index told the mirror, in order, not yet delivered. */
    private final ArrayDeque<Object> sent = new ArrayDeque<>();

    private record Post(int slot, ChunkKey key, long etagHash, int length, int[] pages) {
    }

    private record Recall(int slot) {
    }

    private final ExtentIndex.Mirror mirror = new ExtentIndex.Mirror() {
        @Override
        public void posted(int slot, ChunkKey key, long etagHash, int length, int[] pages) {
            synchronized (sent) {
                sent.add(new Post(slot, key, etagHash, length, pages));
            }
        }

        @Override
        public void recalled(int slot) {
            synchronized (sent) {
                sent.add(new Recall(slot));
            }
        }
    };

    @AfterEach
    void close() throws Exception {
        for (AutoCloseable c : open.reversed()) {
            c.close();
        }
    }

    private ExtentIndex agentIndex(String name, List<ExtentIndex.Held> held) {
        StagingRegion region = StagingRegion.create(new StagingConfig(tmp.resolve(name), CAPACITY, PAGE, 4L * PAGE, Duration.ofSeconds(5)));
        open.add(region);
        return new ExtentIndex(region, 2L * PAGE, mirror, held);
    }

    private PostedRegion hostRegion() {
        PostedRegion host = PostedRegion.create(new StagingConfig(tmp.resolve("host"), CAPACITY, PAGE, 4L * PAGE, Duration.ofSeconds(5)),
                2L * PAGE);
        open.add(host);
        return host;
    }

    /** Delivers what the agent sent: posts with their bytes, recalls answered as the host can. */
    private void deliver(ExtentIndex agent, PostedRegion host) throws IOException {
        for (;;) {
            Object item;
            synchronized (sent) {
                item = sent.poll();
            }
            if (item == null) {
                return;
            }
            if (item instanceof Post p) {
                ByteArrayOutputStream wire = new ByteArrayOutputStream();
                agent.transferPages(p.pages(), p.length(), Channels.newChannel(wire));
                host.receive(p.slot(), p.key(), p.etagHash(), p.length(), p.pages(), Channels.newChannel(new ByteArrayInputStream(wire.toByteArray())));
            } else if (item instanceof Recall r && host.recall(r.slot())) {
                agent.returned(r.slot());
            }
        }
    }

    private static byte[] read(StagingView view, ChunkKey key, String etag) {
        return io.os2g.support.StagedBytes.read(view, key, etag);
    }

    @Test
    void aChunkIsFoundOnTheHostOnlyOnceAllItsBytesArrived() throws IOException {
        ExtentIndex agent = agentIndex("agent", List.of());
        PostedRegion host = hostRegion();
        byte[] body = ExtentIndexTest.pattern(PAGE + 1000, 3);
        ExtentIndexTest.stage(agent, new ChunkKey(7, 0), "e1", body);
        assertNull(read(host.view(), new ChunkKey(7, 0), "e1"), "not before the post");
        deliver(agent, host);
        assertArrayEquals(body, read(host.view(), new ChunkKey(7, 0), "e1"));
        assertNull(read(host.view(), new ChunkKey(7, 0), "e2"), "another version is another chunk");
    }

    @Test
    void aPostCutShortPublishesNothing() {
        PostedRegion host = hostRegion();
        byte[] half = new byte[1000];
        assertThrows(java.io.EOFException.class, () -> host.receive(3, new ChunkKey(1, 0), 5, 2000, new int[] {0},
                Channels.newChannel(new ByteArrayInputStream(half))));
        assertNull(host.view().acquire(new ChunkKey(1, 0), "x"));
        assertTrue(host.held().isEmpty());
    }

    @Test
    void aPostIntoPagesOrASlotTheHostHoldsIsRefused() throws IOException {
        PostedRegion host = hostRegion();
        host.receive(3, new ChunkKey(1, 0), 5, 10, new int[] {0}, Channels.newChannel(new ByteArrayInputStream(new byte[10])));
        assertThrows(IOException.class, () -> host.receive(4, new ChunkKey(2, 0), 5, 10, new int[] {0},
                Channels.newChannel(new ByteArrayInputStream(new byte[10]))), "page 0 holds a chunk");
        assertThrows(IOException.class, () -> host.receive(3, new ChunkKey(2, 0), 5, 10, new int[] {1},
                Channels.newChannel(new ByteArrayInputStream(new byte[10]))), "slot 3 holds a chunk");
        assertThrows(IOException.class, () -> host.receive(5, new ChunkKey(2, 0), 5, 10, new int[] {99},
                Channels.newChannel(new ByteArrayInputStream(new byte[10]))), "no page 99");
        assertThrows(IOException.class, () -> host.receive(5, new ChunkKey(2, 0), 5, PAGE + 1, new int[] {1},
                Channels.newChannel(new ByteArrayInputStream(new byte[PAGE + 1]))), "more bytes than pages");
    }

    @Test
    void evictionRecallsAndItsSpaceComesBackOnlyWhenTheHostsReaderLetsGo() throws Exception {
        ExtentIndex agent = agentIndex("agent", List.of());
        PostedRegion host = hostRegion();
        for (int i = 0; i < 4; i++) { // 8 pages: full
            ExtentIndexTest.stage(agent, new ChunkKey(i, 0), "e", ExtentIndexTest.pattern(2 * PAGE, i));
        }
        deliver(agent, host);
        StagedChunk held = host.view().acquire(new ChunkKey(0, 0), "e"); // a reader on the host holds the oldest
        assertNotNull(held);
        CompletableFuture<Void> fifth = CompletableFuture.runAsync(() -> {
            try {
                ExtentIndexTest.stage(agent, new ChunkKey(9, 0), "e", ExtentIndexTest.pattern(2 * PAGE, 9));
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        // the agent recalls the oldest; the host cannot free it while its reader holds it
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (sent.isEmpty()) {
            assertTrue(System.nanoTime() < deadline, "no recall");
            Thread.sleep(1);
        }
        deliver(agent, host);
        assertTrue(host.recallsPending());
        assertNull(host.view().acquire(new ChunkKey(0, 0), "e"), "a recalled chunk is found no more");
        assertFalse(fifth.isDone(), "its pages are still the host's reader's");
        assertArrayEquals(new int[0], host.returnable());

        host.view().release(held);
        for (int slot : host.returnable()) {
            agent.returned(slot);
        }
        fifth.get(5, TimeUnit.SECONDS);
        deliver(agent, host);
        assertArrayEquals(ExtentIndexTest.pattern(2 * PAGE, 9), read(host.view(), new ChunkKey(9, 0), "e"));
        for (int i = 1; i < 4; i++) {
            assertArrayEquals(ExtentIndexTest.pattern(2 * PAGE, i), read(host.view(), new ChunkKey(i, 0), "e"), "chunk " + i + " untouched");
        }
    }

    @Test
    void anIndexStartedFromWhatTheHostHoldsPlacesAroundIt() throws IOException {
        ExtentIndex first = agentIndex("agent-1", List.of());
        PostedRegion host = hostRegion();
        ExtentIndexTest.stage(first, new ChunkKey(1, 0), "e", ExtentIndexTest.pattern(2 * PAGE, 1));
        ExtentIndexTest.stage(first, new ChunkKey(2, 0), "e", ExtentIndexTest.pattern(PAGE, 2));
        deliver(first, host);
        List<ExtentIndex.Held> held = host.held();
        assertEquals(2, held.size());

        ExtentIndex second = agentIndex("agent-2", held); // an agent restarted: its region is empty, the host's is not
        assertTrue(second.view().contains(new ChunkKey(1, 0), "e"), "held chunks are staged as far as the agent knows");
        for (int i = 3; i < 8; i++) { // 5 pages are left: one page each, nothing recalled
            ExtentIndexTest.stage(second, new ChunkKey(i, 0), "e", ExtentIndexTest.pattern(PAGE, i));
        }
        deliver(second, host);
        assertArrayEquals(ExtentIndexTest.pattern(2 * PAGE, 1), read(host.view(), new ChunkKey(1, 0), "e"));
        assertArrayEquals(ExtentIndexTest.pattern(PAGE, 2), read(host.view(), new ChunkKey(2, 0), "e"));
        for (int i = 3; i < 8; i++) {
            assertArrayEquals(ExtentIndexTest.pattern(PAGE, i), read(host.view(), new ChunkKey(i, 0), "e"));
        }
        assertThrows(StagingException.class, () -> agentIndex("agent-3", List.of(held.get(0), held.get(0))), "a page named twice");
    }
}
