package io.os2g.agent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.os2g.namespace.Namespace;
import io.os2g.namespace.Node;
import io.os2g.staging.ChunkKey;
import io.os2g.staging.ExtentIndex;
import io.os2g.staging.StagedChunk;
import io.os2g.staging.StagingConfig;
import io.os2g.staging.StagingRegion;
import io.os2g.store.ObjectStore;
import io.os2g.support.PausingBody;
import io.os2g.support.ReferenceStore;
import java.io.ByteArrayInputStream;
import java.io.EOFException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A read waits only for its own bytes of a chunk, not for the rest of the chunk's body. */
@Tag("unit")
class AgentFirstBytesTest {

    /** The agent's clock for what it remembers for a while: moved on by the tests, not slept through. */
    private final java.util.concurrent.atomic.AtomicLong clock = new java.util.concurrent.atomic.AtomicLong(System.nanoTime());

    private static final int CHUNK = 1 << 20;

    @TempDir
    Path tmp;

    private final ReferenceStore objects = new ReferenceStore();
    /** How the next GET's body behaves: whole, paused after some bytes, or cut short. */
    private volatile int pauseAfter = -1;
    private volatile int cutAfter = -1;
    private final CountDownLatch rest = new CountDownLatch(1);
    private final CountDownLatch paused = new CountDownLatch(1);
    private final AtomicInteger gets = new AtomicInteger();
    private StagingRegion region;
    private ExtentIndex index;
    private Agent agent;
    private Namespace namespace;

    /** The reference store, with a body that pauses or ends early when the test says so. */
    private final ObjectStore store = new ObjectStore() {
        @Override
        public io.os2g.store.Listing list(String prefix) {
            return objects.list(prefix);
        }

        @Override
        public void get(String key, long offset, long length, String etag, BodyReader reader) {
            gets.incrementAndGet();
            objects.get(key, offset, length, etag, body -> {
                byte[] bytes = body.readAllBytes();
                if (cutAfter >= 0) {
                    reader.read(new ByteArrayInputStream(bytes, 0, cutAfter));
                } else if (pauseAfter >= 0) {
                    reader.read(new PausingBody(bytes, pauseAfter, rest, paused));
                } else {
                    reader.read(new ByteArrayInputStream(bytes));
                }
            });
        }

        @Override
        public void probe(String prefix) {
        }

        @Override
        public String bucket() {
            return objects.bucket();
        }

        @Override
        public void close() {
        }
    };

    @BeforeEach
    void setUp() {
        region = StagingRegion.create(StagingConfig.of(tmp.resolve("staging"), 8L << 20, Duration.ofSeconds(5)));
        index = new ExtentIndex(region, CHUNK);
        namespace = new Namespace(store, "", Duration.ofMinutes(5));
        // no readahead beyond the chunk read: one GET per test
        agent = new Agent(store, index, new AgentConfig(CHUNK, 64 * 1024, 64 * 1024, 8, 0), namespace, null, null, null, clock::get);
    }

    @AfterEach
    void tearDown() {
        rest.countDown();
        agent.close();
        namespace.close();
        region.close();
    }

    private Node.File file(String key, byte[] body, int inode) {
        objects.put(key, body);
        return new Node.File(inode, key, body.length, objects.etag(key), 0);
    }

    private byte[] read(Node.File f, long chunk, int from, int length) {
        StagedChunk c = index.view().acquire(new ChunkKey(f.inode(), chunk), f.etag(), from + length);
        assertNotNull(c, "bytes not readable: chunk " + chunk + " up to " + (from + length));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment target = arena.allocate(length);
            index.view().copyOut(c, from, target, 0, length);
            return target.toArray(ValueLayout.JAVA_BYTE);
        } finally {
            index.view().release(c);
        }
    }

    @Test
    void theFirstBytesOfAChunkAreReadBeforeTheRestOfItsBodyArrives() throws Exception {
        byte[] body = io.os2g.support.S3Fixture.bytes(CHUNK + 5000, 3); // not a whole number of chunks or pages
        Node.File f = file("model.bin", body, 20);
        pauseAfter = 256 * 1024;
        long h = agent.open(f);
        agent.stage(h, 0, 4096).get(5, TimeUnit.SECONDS); // would time out if it waited for the whole chunk
        assertArrayEquals(Arrays.copyOf(body, 4096), read(f, 0, 0, 4096));
        CompletableFuture<Void> further = agent.stage(h, 300_000, 4096);
        CompletableFuture<Void> sameBytesAgain = agent.stage(agent.open(f), 100, 4096);
        sameBytesAgain.get(5, TimeUnit.SECONDS);
        assertTrue(paused.await(5, TimeUnit.SECONDS), "the fetch has staged all the bytes that came and waits for more");
        assertFalse(further.isDone(), "bytes that have not arrived are waited for");
        assertNull(index.view().acquire(new ChunkKey(f.inode(), 0), f.etag()), "not staged whole yet");
        rest.countDown();
        further.get(5, TimeUnit.SECONDS);
        assertArrayEquals(Arrays.copyOfRange(body, 300_000, 304_096), read(f, 0, 300_000, 4096));
        agent.stage(h, CHUNK, 5000).get(5, TimeUnit.SECONDS);
        assertArrayEquals(Arrays.copyOfRange(body, CHUNK, CHUNK + 5000), read(f, 1, 0, 5000));
        for (long deadline = System.nanoTime() + 5_000_000_000L; !index.view().contains(new ChunkKey(f.inode(), 0), f.etag()); ) {
            assertTrue(System.nanoTime() < deadline, "chunk 0 staged whole once its body ended");
            Thread.sleep(5);
        }
        assertArrayEquals(Arrays.copyOf(body, CHUNK), read(f, 0, 0, CHUNK));
        assertEquals(2, gets.get(), "one GET per chunk, however many readers waited on its bytes");
    }

    @Test
    void aBodyCutShortFailsItsWaitersAndLeavesNothingFindable() throws Exception {
        byte[] body = io.os2g.support.S3Fixture.bytes(CHUNK, 4);
        Node.File f = file("ckpt.pt", body, 21);
        cutAfter = 400_000;
        long h = agent.open(f);
        ExecutionException failed = assertThrows(ExecutionException.class, () -> agent.stage(h, 500_000, 4096).get(5, TimeUnit.SECONDS));
        assertNotNull(causeOf(failed, EOFException.class), "the truncated body is the cause: " + failed);
        assertNull(index.view().acquire(new ChunkKey(f.inode(), 0), f.etag(), 1), "the failed chunk is not found, even its first bytes");
        assertEquals(0, index.inFlightBytes());
        assertEquals(0, index.pinnedChunks());
        cutAfter = -1;
        clock.addAndGet(ChunkFetcher.FAILURE_MEMORY.toNanos() + 1); // the failure is forgotten
        agent.stage(h, 500_000, 4096).get(5, TimeUnit.SECONDS);
        assertArrayEquals(Arrays.copyOfRange(body, 500_000, 504_096), read(f, 0, 500_000, 4096));
    }

    private static Throwable causeOf(Throwable t, Class<? extends Throwable> type) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (type.isInstance(c) || (c instanceof UncheckedIOException u && type.isInstance(u.getCause()))) {
                return c;
            }
        }
        return null;
    }
}
