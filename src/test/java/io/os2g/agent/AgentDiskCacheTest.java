package io.os2g.agent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.os2g.diskcache.DiskCache;
import io.os2g.namespace.Namespace;
import io.os2g.namespace.Node;
import io.os2g.staging.ExtentIndex;
import io.os2g.staging.StagingConfig;
import io.os2g.staging.StagingRegion;
import io.os2g.store.MinioObjectStore;
import io.os2g.support.S3Fixture;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.gaul.s3proxy.junit.S3ProxyExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** Agents over S3Proxy with a disk cache below their staging: tiers, versions, and agents sharing one directory. */
@Tag("s3")
class AgentDiskCacheTest {

    private static final int CHUNK = 256 * 1024;

    @RegisterExtension
    final S3ProxyExtension proxy = S3Fixture.newProxy();

    @TempDir
    Path tmp;

    private S3Fixture s3;
    private final List<AutoCloseable> closing = new ArrayList<>();

    /** One agent with a staging region of its own and the cache in {@code tmp/cache}, as another process would have. */
    private record Rig(MinioObjectStore store, ExtentIndex index, Agent agent, DiskCache cache, Namespace namespace) {
    }

    @BeforeEach
    void setUp() throws Exception {
        s3 = new S3Fixture(proxy).bucket("data");
    }

    @AfterEach
    void tearDown() throws Exception {
        for (AutoCloseable c : closing.reversed()) {
            c.close();
        }
    }

    private Rig rig(String name) {
        return rig(name, 0, Long.MAX_VALUE);
    }

    /** @param directoryPrefetch the agent's --dir-prefetch (0: no directory prefetch, no fill) */
    private Rig rig(String name, int directoryPrefetch, long cacheBytes) {
        MinioObjectStore store = s3.store("data");
        StagingRegion region = StagingRegion.create(StagingConfig.of(tmp.resolve(name), 4L << 20, Duration.ofSeconds(5)));
        ExtentIndex index = new ExtentIndex(region, CHUNK);
        Namespace namespace = new Namespace(store, "", Duration.ofMinutes(5));
        DiskCache cache = DiskCache.open(tmp.resolve("cache"), cacheBytes, 0);
        Agent agent = new Agent(store, index, new AgentConfig(CHUNK, 64 * 1024, 1 << 20, 8, directoryPrefetch), namespace, cache,
                "http://s3proxy data");
        closing.add(store);
        closing.add(region);
        closing.add(namespace::close);
        closing.add(cache);
        closing.add(agent);
        return new Rig(store, index, agent, cache, namespace);
    }

    private static byte[] bytes(int n, int seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    private static Node.File file(Rig r, String key, int inode) {
        var o = r.store().list(key.substring(0, key.lastIndexOf('/') + 1)).objects().stream().filter(x -> x.key().equals(key)).findFirst().orElseThrow();
        return new Node.File(inode, key, o.size(), o.etag(), o.lastModifiedMillis());
    }

    /** Reads the whole file through the agent, chunk by chunk, from its staging region. */
    private static byte[] read(Rig r, Node.File f) throws Exception {
        return StagedReads.read(r.agent(), r.index(), f, CHUNK);
    }

    @Test
    void aSecondAgentReadsWhatTheFirstFetchedFromDiskWithNoGet() throws Exception {
        byte[] data = bytes(3 * CHUNK + 1000, 1);
        s3.put("data", "d/a.bin", data);
        Rig first = rig("one");
        assertArrayEquals(data, read(first, file(first, "d/a.bin", 10)));
        assertEquals(4, first.store().getCount());
        first.cache().flush(Duration.ofSeconds(10));
        assertEquals(data.length, first.cache().counters().bytesWritten());

        Rig second = rig("two");
        assertArrayEquals(data, read(second, file(second, "d/a.bin", 10)));
        assertEquals(0, second.store().getCount(), "every chunk from the disk cache");
        assertEquals(4, second.agent().chunksFromDisk());
        assertEquals(4, second.cache().counters().hits());
    }

    @Test
    void aChangedObjectIsFetchedAgainNotServedFromItsOldBlocks() throws Exception {
        s3.put("data", "d/v.bin", bytes(CHUNK + 5, 2));
        Rig first = rig("one");
        read(first, file(first, "d/v.bin", 11));
        first.cache().flush(Duration.ofSeconds(10));

        byte[] changed = bytes(CHUNK + 5, 3);
        s3.put("data", "d/v.bin", changed);
        Rig second = rig("two");
        assertArrayEquals(changed, read(second, file(second, "d/v.bin", 11)), "the new version's bytes");
        assertEquals(2, second.store().getCount(), "its chunks fetched: a new ETag is another block");
        assertEquals(0, second.cache().counters().hits());
    }

    @Test
    void twoAgentsSharingOneDirectoryReadingTheSameFilesAtOnceGetTheirBytes() throws Exception {
        List<byte[]> data = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            data.add(bytes(2 * CHUNK + 17 * i, 10 + i));
            s3.put("data", "d/s" + i + ".bin", data.get(i));
        }
        Rig a = rig("a"), b = rig("b");
        List<CompletableFuture<Void>> all = new ArrayList<>();
        for (Rig r : List.of(a, b)) {
            all.add(CompletableFuture.runAsync(() -> {
                try {
                    for (int round = 0; round < 3; round++) {
                        for (int i = 0; i < 8; i++) {
                            assertArrayEquals(data.get(i), read(r, file(r, "d/s" + i + ".bin", 100 + i)));
                        }
                    }
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }));
        }
        CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(120, TimeUnit.SECONDS);
        assertEquals(0, a.cache().counters().corrupt() + b.cache().counters().corrupt());
    }

    @Test
    void aDirectoryBeingReadThroughIsFilledIntoTheDiskCacheAheadOfItsReadersAtAGrowingPace() throws Exception {
        int files = 60;
        List<byte[]> data = new ArrayList<>();
        for (int i = 0; i < files; i++) {
            data.add(bytes(3000 + i, 40 + i));
            s3.put("data", String.format("f/x%02d.jpg", i), data.get(i));
        }
        Rig first = rig("one", 2, Long.MAX_VALUE);
        List<Node.File> listed = new ArrayList<>();
        first.namespace().resolve("/f/x00.jpg"); // the listing the prefetcher reads
        for (int i = 0; i < files; i++) {
            listed.add((Node.File) first.namespace().resolve(String.format("/f/x%02d.jpg", i)));
        }
        for (int i : new int[] {59, 58}) {
            assertArrayEquals(data.get(i), read(first, listed.get(i)));
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        awaitFillsAtRest(first.agent(), deadline);
        assertEquals(32, first.agent().fillsAsked(), "two opens ask for 2 x 16 files, in listing order");
        long before = first.agent().filledFiles();
        assertTrue(before > 0 && before <= 32, "filled what was not staged already: " + before);
        for (int i : new int[] {57, 56, 55}) { // five opens: 80 files allowed, the whole directory
            assertArrayEquals(data.get(i), read(first, listed.get(i)));
        }
        while (first.store().getCount() < files) {
            Thread.sleep(100);
            assertTrue(System.nanoTime() < deadline, "fetched " + first.store().getCount() + " of " + files);
        }
        first.cache().flush(Duration.ofSeconds(10));
        assertEquals(files, first.store().getCount(), "each file fetched once, filled or read");

        Rig second = rig("two");
        for (int i = 0; i < files; i++) {
            assertArrayEquals(data.get(i), read(second, listed.get(i)));
        }
        assertEquals(0, second.store().getCount(), "the whole directory on disk");
    }

    @Test
    void aDirectoryLargerThanHalfOfWhatTheCacheMayTakeIsNotFilled() throws Exception {
        for (int i = 0; i < 20; i++) {
            s3.put("data", String.format("g/y%02d.jpg", i), bytes(4000, 80 + i)); // 80 KB against a 64 KiB bound
        }
        Rig r = rig("one", 2, 64 * 1024);
        r.namespace().resolve("/g/y00.jpg");
        for (int i = 0; i < 5; i++) {
            read(r, (Node.File) r.namespace().resolve(String.format("/g/y%02d.jpg", i)));
        }
        assertEquals(0, r.agent().fillsAsked(), "decided within each open: no fill asked for");
        assertEquals(0, r.agent().filledFiles());
    }

    /** Until every fill asked for has ended and none more is asked for (until the next open). */
    private static void awaitFillsAtRest(Agent agent, long deadline) throws InterruptedException {
        while (!agent.fillsAtRest()) {
            assertTrue(System.nanoTime() < deadline, "fills never came to rest");
            Thread.sleep(5);
        }
    }
}
