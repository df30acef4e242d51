package io.os2g.agent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.os2g.namespace.Namespace;
import io.os2g.namespace.Node;
import io.os2g.staging.ChunkKey;
import io.os2g.staging.ExtentIndex;
import io.os2g.staging.StagedChunk;
import io.os2g.staging.StagingConfig;
import io.os2g.staging.StagingRegion;
import io.os2g.store.MinioObjectStore;
import io.os2g.store.StoreException;
import io.os2g.support.S3Fixture;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.gaul.s3proxy.junit.S3ProxyExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

@Tag("s3")
class AgentTest {

    /** The agent's clock for what it remembers for a while: moved on by the tests, not slept through. */
    private final java.util.concurrent.atomic.AtomicLong clock = new java.util.concurrent.atomic.AtomicLong(System.nanoTime());

    private static final int CHUNK = 256 * 1024;

    @RegisterExtension
    final S3ProxyExtension proxy = S3Fixture.newProxy();

    @TempDir
    Path tmp;

    private S3Fixture s3;
    private MinioObjectStore store;
    private StagingRegion region;
    private ExtentIndex index;
    private Agent agent;
    private Namespace namespace;

    @BeforeEach
    void setUp() throws Exception {
        s3 = new S3Fixture(proxy).bucket("data");
        store = s3.store("data");
        region = StagingRegion.create(StagingConfig.of(tmp.resolve("staging"), 8L << 20, Duration.ofSeconds(5)));
        index = new ExtentIndex(region, CHUNK);
        namespace = new Namespace(store, "", Duration.ofMinutes(5));
        agent = new Agent(store, index, new AgentConfig(CHUNK, 64 * 1024, 1 << 20, 8, 0), namespace, null, null, null, clock::get);
    }

    @AfterEach
    void tearDown() {
        agent.close();
        namespace.close();
        store.close();
        region.close();
    }

    private Node.File file(String key, int inode) {
        var object = store.list("").objects().stream().filter(o -> o.key().equals(key)).findFirst().orElseThrow();
        return new Node.File(inode, key, object.size(), object.etag(), object.lastModifiedMillis());
    }

    /** The chunk's bytes once it is staged whole (a read completes when its own bytes are readable, maybe sooner). */
    private byte[] staged(Node.File file, long chunk) throws InterruptedException {
        StagedChunk c = null;
        for (long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10); c == null && System.nanoTime() < deadline; Thread.sleep(5)) {
            c = index.view().acquire(new ChunkKey(file.inode(), chunk), file.etag());
        }
        assertNotNull(c, "chunk " + chunk + " not staged");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment target = arena.allocate(c.length());
            index.view().copyOut(c, 0, target, 0, c.length());
            return target.toArray(ValueLayout.JAVA_BYTE);
        } finally {
            index.view().release(c);
        }
    }

    @Test
    void concurrentReadersOfOneChunkShareOneGet() throws Exception {
        byte[] body = S3Fixture.bytes(CHUNK, 3);
        s3.put("data", "obj", body);
        Node.File f = file("obj", 10);
        long before = store.getCount();
        List<CompletableFuture<Void>> reads = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            long h = agent.open(f);
            reads.add(agent.stage(h, i * 1000L, 100));
        }
        CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
        assertEquals(1, store.getCount() - before);
        assertArrayEquals(body, staged(f, 0));
    }

    @Test
    void aSmallObjectIsFetchedWholeOnFirstRead() throws Exception {
        byte[] body = S3Fixture.bytes(125_000, 4);
        s3.put("data", "img.jpg", body);
        Node.File f = file("img.jpg", 11);
        agent.stage(agent.open(f), 0, 4096).get(10, TimeUnit.SECONDS);
        assertArrayEquals(body, staged(f, 0));
        assertEquals(125_000, agent.fetchedBytes());
    }

    @Test
    void sequentialReadsStageChunksAheadOfTheReader() throws Exception {
        byte[] body = S3Fixture.bytes(12 * CHUNK, 5);
        s3.put("data", "big", body);
        Node.File f = file("big", 12);
        long h = agent.open(f);
        for (int c = 0; c < 5; c++) {
            agent.stage(h, (long) c * CHUNK, 128 * 1024).get(10, TimeUnit.SECONDS);
        }
        // the window doubled from 64 KiB to its 1 MiB cap: the fifth read (chunk 4) reaches into chunk 8;
        // readahead fetches run in parallel and may land in any order
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        for (int c = 0; c <= 8; c++) {
            while (!index.view().contains(new ChunkKey(12, c), f.etag())) {
                assertTrue(System.nanoTime() < deadline, "chunk " + c + " not staged");
                Thread.sleep(10);
            }
        }
        assertTrue(!index.view().contains(new ChunkKey(12, 9), f.etag()), "nothing staged beyond the window");
        for (int c = 0; c <= 8; c++) {
            byte[] expected = java.util.Arrays.copyOfRange(body, c * CHUNK, (c + 1) * CHUNK);
            assertArrayEquals(expected, staged(f, c), "chunk " + c);
        }
    }

    @Test
    void anObjectChangedSinceOpenFailsTheReadWithEio() throws Exception {
        s3.put("data", "obj", S3Fixture.bytes(1000, 1));
        Node.File f = file("obj", 13);
        s3.put("data", "obj", S3Fixture.bytes(1000, 2));
        ExecutionException e = assertThrows(ExecutionException.class,
                () -> agent.stage(agent.open(f), 0, 1000).get(10, TimeUnit.SECONDS));
        assertEquals(StoreException.Kind.CHANGED, assertInstanceOf(StoreException.class, e.getCause()).kind());
        assertTrue(index.freeBytes() == index.capacityBytes(), "the failed fetch returned its pages");
    }

    @Test
    void anObjectDeletedSinceOpenIsEioNotEnoent() throws Exception {
        s3.put("data", "gone", S3Fixture.bytes(1000, 1));
        Node.File f = file("gone", 14);
        s3.delete("data", "gone");
        ExecutionException e = assertThrows(ExecutionException.class,
                () -> agent.stage(agent.open(f), 0, 1000).get(10, TimeUnit.SECONDS));
        assertEquals(io.os2g.Errno.EIO, assertInstanceOf(AgentException.class, e.getCause()).errno());
    }

    @Test
    void aFailedChunkFailsAtOnceForAMomentThenIsFetchedAgain() throws Exception {
        s3.put("data", "obj", S3Fixture.bytes(1000, 1));
        Node.File f = file("obj", 15);
        s3.delete("data", "obj");
        long h = agent.open(f);
        assertThrows(ExecutionException.class, () -> agent.stage(h, 0, 1000).get(10, TimeUnit.SECONDS));
        long gets = store.getCount();
        s3.put("data", "obj", S3Fixture.bytes(1000, 1)); // same bytes, same ETag: the version the handle pinned
        assertThrows(ExecutionException.class, () -> agent.stage(h, 0, 1000).get(10, TimeUnit.SECONDS));
        assertEquals(gets, store.getCount(), "the kernel's immediate second ask costs no GET and no deadline");
        clock.addAndGet(ChunkFetcher.FAILURE_MEMORY.toNanos() + 1); // the failure is forgotten
        agent.stage(h, 0, 1000).get(10, TimeUnit.SECONDS);
        assertArrayEquals(S3Fixture.bytes(1000, 1), staged(f, 0));
    }

    @Test
    void aDirectoryBeingReadThroughHasItsNextSmallFilesStagedBeforeTheirOpen() throws Exception {
        List<Node.File> files = imagesWithADirectoryPrefetchOf4();

        agent.release(agent.open(files.get(7)));
        assertEquals(0, agent.prefetchedFiles(), "one open is not a scan"); // decided within the open

        agent.release(agent.open(files.get(3)));
        awaitStaged(files.subList(0, 3));
        awaitStaged(files.subList(4, 5));
        assertEquals(4, agent.prefetchedFiles(), "a window of 4 files, in listing order, skipping the opened one");
        assertTrue(!index.view().contains(new ChunkKey(files.get(5).inode(), 0), files.get(5).etag()), "nothing past the window");

        agent.release(agent.open(files.get(0))); // one prefetched file opened: the window moves by one
        awaitStaged(files.subList(5, 6));
        assertEquals(5, agent.prefetchedFiles());
        assertArrayEquals(S3Fixture.bytes(50_000, 1), staged(files.get(1), 0));
    }

    @Test
    void aDirectoryReadThroughAgainAfterOtherReadsIsStagedAheadAgain() throws Exception {
        List<Node.File> files = imagesWithADirectoryPrefetchOf4();
        s3.put("data", "big", S3Fixture.bytes(48 * CHUNK, 7)); // 12 MiB through an 8 MiB region
        for (int i : new int[] {7, 3, 0, 9, 5, 1, 8, 2, 6, 4}) { // the first epoch, shuffled
            agent.release(agent.open(files.get(i))); // opened to look at, then to read: one pass still
            agent.release(agent.open(files.get(i)));
        }
        assertEquals(1, agent.directoryPrefetchCounters().get("passes"));
        Node.File big = file("big", 99);
        long h = agent.open(big);
        for (int i = 0; i < 48; i++) { // read out of order: no scan, so the images are evicted as any other chunk
            long c = i * 7L % 48;
            agent.stage(h, c * CHUNK, CHUNK).get(10, TimeUnit.SECONDS);
        }
        agent.release(h);
        for (Node.File f : files) {
            assertFalse(index.view().contains(new ChunkKey(f.inode(), 0), f.etag()), "the large file evicted " + f.key());
        }
        long staged = agent.prefetchedFiles();

        agent.release(agent.open(files.get(7))); // the second epoch begins
        awaitStaged(files.subList(0, 4));
        assertEquals(staged + 4, agent.prefetchedFiles(), "a window of 4 again, from the listing's start");
        agent.release(agent.open(files.get(2)));
        agent.release(agent.open(files.get(0)));
        awaitStaged(files.subList(4, 6));
        Map<String, Long> counters = agent.directoryPrefetchCounters();
        assertEquals(2, counters.get("passes"), "the first pass and the second epoch");
        assertTrue(counters.get("staged_then_opened") >= 2, counters.toString());
        assertArrayEquals(S3Fixture.bytes(50_000, 5), staged(files.get(5), 0));
    }

    @Test
    void readsAcrossSiblingDirectoriesAreASweepThatStagesTheWholeTreeAhead() throws Exception {
        aTreeOf4ClassesOf6Images();
        List<List<Node.File>> classes = new ArrayList<>();
        for (int c = 0; c < 3; c++) { // c3 is listed only once a reader looks into it (a loader given a list of paths)
            classes.add(filesOf("/train/c" + c));
        }
        namespace.list((Node.Dir) namespace.resolve("/train"));

        agent.release(agent.open(classes.get(0).get(5)));
        agent.release(agent.open(classes.get(0).get(2)));
        awaitStaged(classes.get(0).subList(0, 2));
        for (Node.File f : classes.get(2)) { // decided within the opens
            assertFalse(index.view().contains(new ChunkKey(f.inode(), 0), f.etag()), "one directory read through is no sweep");
        }
        assertEquals(0, agent.directoryPrefetchCounters().get("sweeps"));

        agent.release(agent.open(classes.get(1).get(4)));
        agent.release(agent.open(classes.get(1).get(0))); // a second sibling: the tree is being swept
        awaitStaged(classes.get(2));
        awaitStaged(classes.get(1).subList(1, 4));
        awaitStaged(classes.get(0).subList(3, 5)); // beyond its own window of 4
        assertEquals(1, agent.directoryPrefetchCounters().get("sweeps"));
        long staged = agent.prefetchedFiles();
        agent.release(agent.open(classes.get(2).get(0)));
        assertEquals(staged, agent.prefetchedFiles(), "c3 not listed yet: passed over");

        classes.add(filesOf("/train/c3"));
        agent.release(agent.open(classes.get(3).get(1))); // looked up, then opened: the sweep reaches it
        awaitStaged(classes.get(3).subList(2, 6));
        assertArrayEquals(S3Fixture.bytes(50_000, 35), staged(classes.get(3).get(5), 0));
    }

    @Test
    void aNewEpochOfASweepKeepsWhatIsStillStagedInsteadOfFetchingItAgain() throws Exception {
        aTreeOf4ClassesOf6Images();
        List<Node.File> all = new ArrayList<>();
        for (int c = 0; c < 4; c++) {
            all.addAll(filesOf("/train/c" + c));
        }
        namespace.list((Node.Dir) namespace.resolve("/train"));
        List<Node.File> first = new ArrayList<>(all.subList(1, all.size()));
        java.util.Collections.shuffle(first, new java.util.Random(1));
        first.addFirst(all.get(0)); // c0/00 first: opened again first, it begins the next epoch at once
        for (Node.File f : first) {
            readWhole(f);
        }
        awaitStaged(all); // the region holds the whole tree
        awaitUnpinned();
        long staged = agent.prefetchedFiles();

        List<Node.File> second = new ArrayList<>(first.subList(1, first.size()));
        java.util.Collections.shuffle(second, new java.util.Random(2));
        second.addFirst(all.get(0));
        readWhole(second.getFirst());
        Map<String, Long> counters = agent.directoryPrefetchCounters();
        assertEquals(23, counters.get("kept_staged"), "every other file of every directory kept for the new epoch: " + counters);
        assertEquals(23, index.pinnedChunks(), "held until its reader opens it");
        s3.put("data", "big", S3Fixture.bytes(48 * CHUNK, 7)); // 12 MiB through an 8 MiB region, out of order
        long h = agent.open(file("big", 99));
        for (int i = 0; i < 48; i++) {
            agent.stage(h, i * 7L % 48 * CHUNK, CHUNK).get(10, TimeUnit.SECONDS);
        }
        agent.release(h);
        assertTrue(index.evictions() > 0, "the region filled");
        for (Node.File f : second.subList(1, second.size())) {
            assertTrue(index.view().contains(new ChunkKey(f.inode(), 0), f.etag()), "evicted though kept: " + f.key());
        }
        for (Node.File f : second.subList(1, second.size())) {
            readWhole(f);
        }
        assertEquals(staged, agent.prefetchedFiles(), "nothing of the tree fetched again");
        assertEquals(23 + counters.get("staged_then_opened"), agent.directoryPrefetchCounters().get("staged_then_opened"));
        awaitUnpinned(); // every kept file let go once read (and the large file's last readahead landed)
        assertEquals(0, agent.directoryPrefetchCounters().get("dropped_unopened"));
        assertArrayEquals(S3Fixture.bytes(50_000, 35), staged(all.getLast(), 0));
    }

    /** Waits until no chunk is pinned (fetches that end after their reader held only pins for a moment). */
    private void awaitUnpinned() throws InterruptedException {
        for (long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10); index.pinnedChunks() > 0 && System.nanoTime() < deadline; ) {
            Thread.sleep(5);
        }
        assertEquals(0, index.pinnedChunks());
    }

    private void readWhole(Node.File file) throws Exception {
        long h = agent.open(file);
        agent.stage(h, 0, file.size()).get(10, TimeUnit.SECONDS);
        agent.release(h);
    }

    @Test
    void aLargeFileReadOnceInOrderRecyclesItsOwnChunksNotADatasetsFiles() throws Exception {
        List<Node.File> files = imagesWithADirectoryPrefetchOf4();
        s3.put("data", "big", S3Fixture.bytes(48 * CHUNK, 7)); // 12 MiB through an 8 MiB region
        for (Node.File f : files) { // an epoch over the images: all read, none pinned
            long h = agent.open(f);
            agent.stage(h, 0, f.size()).get(10, TimeUnit.SECONDS);
            agent.release(h);
        }
        Node.File big = file("big", 99);
        readInOrder(big, 48);
        assertTrue(index.evictions() > 0, "the region filled");
        for (Node.File f : files) {
            assertTrue(index.view().contains(new ChunkKey(f.inode(), 0), f.etag()), "pushed out by a scan: " + f.key());
        }
        assertArrayEquals(java.util.Arrays.copyOfRange(S3Fixture.bytes(48 * CHUNK, 7), 47 * CHUNK, 48 * CHUNK), staged(big, 47),
                "the scan's own last chunk");
    }

    private void readInOrder(Node.File file, int chunks) throws Exception {
        long h = agent.open(file);
        for (int c = 0; c < chunks; c++) {
            agent.stage(h, (long) c * CHUNK, CHUNK).get(10, TimeUnit.SECONDS);
        }
        agent.release(h);
    }

    @Test
    void prefetchedFilesStayStagedUntilOpenedWhileOtherReadsFillTheRegion() throws Exception {
        List<Node.File> files = imagesWithADirectoryPrefetchOf4();
        s3.put("data", "big", S3Fixture.bytes(48 * CHUNK, 7)); // 12 MiB through an 8 MiB region
        agent.release(agent.open(files.get(7)));
        agent.release(agent.open(files.get(3)));
        List<Node.File> prefetched = List.of(files.get(0), files.get(1), files.get(2), files.get(4));
        awaitStaged(prefetched);

        Node.File big = file("big", 99);
        readInOrder(big, 48);
        assertTrue(index.evictions() > 0, "the region filled");
        for (Node.File f : prefetched) {
            assertTrue(index.view().contains(new ChunkKey(f.inode(), 0), f.etag()), "evicted before its open: " + f.key());
        }
        agent.close();
        assertEquals(0, index.pinnedChunks(), "closing the agent gives every pin back");
    }

    @Test
    void membersOfATarReadThroughInOrderAreStagedWithOneGetPerRun() throws Exception {
        agent.close();
        namespace.close();
        java.io.ByteArrayOutputStream tar = new java.io.ByteArrayOutputStream();
        try (var out = new org.apache.commons.compress.archivers.tar.TarArchiveOutputStream(tar)) {
            for (int i = 0; i < 12; i++) {
                var entry = new org.apache.commons.compress.archivers.tar.TarArchiveEntry(String.format("cls/%02d.jpg", i));
                entry.setSize(20_000);
                out.putArchiveEntry(entry);
                out.write(S3Fixture.bytes(20_000, i));
                out.closeArchiveEntry();
            }
        }
        s3.put("data", "shards/s.tar", tar.toByteArray());
        TarExpandingStore tars = new TarExpandingStore(store);
        namespace = new Namespace(tars, "", Duration.ofMinutes(5));
        agent = new Agent(tars, index, new AgentConfig(CHUNK, 64 * 1024, 1 << 20, 8, 16), namespace);
        Node.Dir cls = (Node.Dir) namespace.resolve("/shards/s.tar.d/cls");
        List<Node.File> files = namespace.list(cls).entries().values().stream().map(Node.File.class::cast).toList();
        long before = store.getCount();

        agent.release(agent.open(files.get(0)));
        agent.release(agent.open(files.get(1)));
        awaitStaged(files.subList(2, 12));
        // 00 and 01 are opened: their readers stage them; 02-11 (200 KB in a row) come in one GET
        assertEquals(1, store.getCount() - before, "one GET for the run 02-11, not 10");
        for (int i = 2; i < 12; i++) {
            assertArrayEquals(S3Fixture.bytes(20_000, i), staged(files.get(i), 0), files.get(i).key());
        }
    }

    /** An agent whose directory prefetcher keeps 4 files ahead, and the 10 files of 50 KB of imgs/. */
    /** train/c0..c3, 6 images of 50,000 bytes each (c/NN.jpg holds bytes seeded 10c+N), under a prefetch window of 4. */
    private void aTreeOf4ClassesOf6Images() throws Exception {
        agent.close();
        agent = new Agent(store, index, new AgentConfig(CHUNK, 64 * 1024, 1 << 20, 8, 4), namespace);
        for (int c = 0; c < 4; c++) {
            for (int i = 0; i < 6; i++) {
                s3.put("data", String.format("train/c%d/%02d.jpg", c, i), S3Fixture.bytes(50_000, 10 * c + i));
            }
        }
    }

    private List<Node.File> imagesWithADirectoryPrefetchOf4() throws Exception {
        agent.close();
        agent = new Agent(store, index, new AgentConfig(CHUNK, 64 * 1024, 1 << 20, 8, 4), namespace);
        for (int i = 0; i < 10; i++) {
            s3.put("data", String.format("imgs/%02d.jpg", i), S3Fixture.bytes(50_000, i));
        }
        Node.Dir imgs = (Node.Dir) namespace.resolve("/imgs");
        return namespace.list(imgs).entries().values().stream().map(Node.File.class::cast).toList();
    }

    private List<Node.File> filesOf(String dir) {
        return namespace.list((Node.Dir) namespace.resolve(dir)).entries().values().stream().map(Node.File.class::cast).toList();
    }

    private void awaitStaged(List<Node.File> files) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        for (Node.File f : files) {
            while (!index.view().contains(new ChunkKey(f.inode(), 0), f.etag())) {
                assertTrue(System.nanoTime() < deadline, "not staged: " + f.key());
                Thread.sleep(5);
            }
        }
    }
}
