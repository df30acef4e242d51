package io.os2g.staging;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Writers stage and re-stage chunks in a region far too small for them while readers pin and copy:
 * every copy must equal the bytes of the version it pinned (never torn by an eviction), and when the
 * dust settles every page is free again. Readers go through the agent's own view or through a second
 * mapping of the same files, as a shim in another process does; or they splice the chunk into a pipe
 * and read the pipe some time later, before they let the pin go (as a READ's reply is sent before its
 * pins go): the pipe refers to the pages themselves, which writers must not reuse meanwhile.
 */
@Tag("stress")
class ExtentIndexStressTest {

    private static final int PAGE = 64 * 1024;

    @TempDir
    Path tmp;

    @ParameterizedTest(name = "readers through {0}")
    @ValueSource(strings = {"the agent's view", "their own mapping", "a pipe read before the pin goes"})
    void readersNeverSeeBytesOfAnotherChunk(String readers) throws Exception {
        StagingConfig config = new StagingConfig(tmp.resolve("s"), 24L * PAGE, PAGE, 8L * PAGE, Duration.ofSeconds(10));
        StagingRegion region = StagingRegion.create(config);
        // "their own mapping": the segments and extent table mapped again, as a shim in another process maps them
        StagingView attached = null;
        try {
            ExtentIndex index = new ExtentIndex(region, 3L * PAGE);
            StagingView view = readers.startsWith("their") ? (attached = StagingView.attach(config)) : index.view();
            int keys = 40;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
            List<Callable<Long>> tasks = new ArrayList<>();
            for (int w = 0; w < 3; w++) {
                int seed = w;
                tasks.add(() -> {
                    SplittableRandom random = new SplittableRandom(seed);
                    long n = 0;
                    while (System.nanoTime() < deadline) {
                        int k = random.nextInt(keys);
                        int version = random.nextInt(3);
                        byte[] body = body(k, version);
                        Reservation r = index.reserve(body.length);
                        r.fill(new ByteArrayInputStream(body));
                        r.publish(new ChunkKey(k, 0), "v" + version);
                        n++;
                    }
                    return n;
                });
            }
            for (int rd = 0; rd < 4; rd++) {
                int seed = 100 + rd;
                tasks.add(() -> {
                    SplittableRandom random = new SplittableRandom(seed);
                    long verified = 0;
                    try (Arena arena = Arena.ofConfined(); TestPipe pipe = readers.startsWith("a pipe") ? new TestPipe(4 * PAGE) : null) {
                        MemorySegment target = arena.allocate(3L * PAGE);
                        while (System.nanoTime() < deadline) {
                            int k = random.nextInt(keys);
                            int version = random.nextInt(3);
                            StagedChunk chunk = view.acquire(new ChunkKey(k, 0), "v" + version);
                            if (chunk == null) {
                                continue;
                            }
                            try {
                                if (pipe == null) {
                                    view.copyOut(chunk, 0, target, 0, chunk.length());
                                } else {
                                    assertTrue(view.spliceOut(chunk, 0, pipe.writeEnd(), chunk.length()), "the pipe took the chunk");
                                    Thread.sleep(0, random.nextInt(200_000)); // writers stage and evict meanwhile
                                    pipe.readFully(target, chunk.length());
                                }
                            } finally {
                                view.release(chunk);
                            }
                            byte[] expected = body(k, version);
                            byte[] got = target.asSlice(0, chunk.length()).toArray(ValueLayout.JAVA_BYTE);
                            if (!java.util.Arrays.equals(expected, got)) {
                                throw new AssertionError("torn read of key " + k + " version " + version);
                            }
                            verified++;
                        }
                    }
                    return verified;
                });
            }
            ExecutorService pool = Executors.newFixedThreadPool(tasks.size());
            long verified = 0;
            try {
                List<Future<Long>> results = pool.invokeAll(tasks);
                for (int i = 0; i < results.size(); i++) {
                    long n = results.get(i).get();
                    if (i >= 3) {
                        verified += n;
                    }
                }
            } finally {
                pool.shutdownNow();
            }
            assertTrue(verified > 100, "readers verified only " + verified + " copies");
            assertTrue(index.evictions() > 0);
            index.evictAll();
            assertEquals(index.capacityBytes(), index.freeBytes(), "every page is free once nothing is staged");
        } finally {
            if (attached != null) {
                attached.close();
            }
            region.close();
        }
    }

    private static byte[] body(int key, int version) {
        int length = PAGE / 2 + (key * 7919 + version * 104729) % (2 * PAGE);
        return ExtentIndexTest.pattern(length, key * 3 + version);
    }
}
