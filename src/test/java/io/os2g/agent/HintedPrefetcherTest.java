package io.os2g.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.os2g.namespace.Namespace;
import io.os2g.namespace.Node;
import io.os2g.staging.ChunkKey;
import io.os2g.staging.ExtentIndex;
import io.os2g.staging.StagingConfig;
import io.os2g.staging.StagingRegion;
import io.os2g.support.ReferenceStore;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Hints through the agent: order, the window ahead of readers, pins until read, replace, skip, warm. */
@Tag("unit")
class HintedPrefetcherTest {

    private static final int CHUNK = 1 << 20;
    private static final long REGION = 8L << 20; // hints may hold 4 MiB of it

    @TempDir
    Path tmp;

    private final ReferenceStore store = new ReferenceStore();
    private StagingRegion region;
    private ExtentIndex index;
    private Namespace namespace;
    private Agent agent;

    private void start(int maxInFlight) {
        region = StagingRegion.create(StagingConfig.of(tmp.resolve("staging"), REGION, Duration.ofSeconds(2)));
        index = new ExtentIndex(region, CHUNK);
        namespace = new Namespace(store, "", Duration.ofMinutes(5));
        agent = new Agent(store, index, new AgentConfig(CHUNK, 64 * 1024, 1 << 20, maxInFlight, 0), namespace);
    }

    @AfterEach
    void tearDown() {
        if (agent != null) {
            agent.close();
            namespace.close();
            region.close();
        }
    }

    /** {@code count} objects of {@code size} bytes under {@code dir}, as files with distinct inodes. */
    private List<Node.File> files(String dir, int count, int size) {
        List<Node.File> files = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            String key = String.format("%s/%04d.jpg", dir, i);
            store.put(key, size);
            files.add(new Node.File(dir.hashCode() * 100_000L + i, key, size, store.etag(key), 0));
        }
        return files;
    }

    private boolean staged(Node.File f) {
        return index.view().contains(new ChunkKey(f.inode(), 0), f.etag());
    }

    private static void await(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(5);
        }
    }

    /** Waits until the hinted files stop being fetched, and returns how many were staged. */
    private long settle(Map<String, Long> before) throws InterruptedException {
        long last = -1;
        long now = agent.hintCounters().get("files_staged");
        while (now != last) {
            last = now;
            Thread.sleep(150);
            now = agent.hintCounters().get("files_staged");
        }
        return now - (before == null ? 0 : before.get("files_staged"));
    }

    @Test
    void stagesHintedFilesInOrderNoFurtherThanTheWindowAheadOfReaders() throws Exception {
        start(1);
        List<Node.File> hinted = files("train", 100, 100_000);
        agent.prefetch(hinted, true, false);

        // a file of 100,000 bytes takes two 64 KiB pages: 4 MiB of window holds 32; fetched in the order given
        assertEquals(32, settle(null));
        assertEquals(hinted.subList(0, 32).stream().map(Node.File::key).toList(), store.getOrder);
        assertEquals(32, index.pinnedChunks(), "staged but unread hinted files are pinned");

        // readers open ten: the window moves ten files on
        for (Node.File f : hinted.subList(0, 10)) {
            agent.release(agent.open(f.inode(), f.key(), f.etag(), f.size()));
        }
        await(() -> agent.hintCounters().get("files_staged") == 42, "the window to move on");
        assertEquals(hinted.subList(0, 42).stream().map(Node.File::key).toList(), store.getOrder);
        assertEquals(32, index.pinnedChunks(), "read files are let go");
        assertEquals(10L, agent.hintCounters().get("staged_before_open"));
        assertEquals(0L, agent.hintCounters().get("opened_before_staged"));
    }

    @Test
    void stagedButUnreadHintsSurviveOtherReadersFillingTheRegion() throws Exception {
        start(4);
        List<Node.File> hinted = files("train", 30, 100_000);
        agent.prefetch(hinted, true, false);
        await(() -> agent.hintCounters().get("files_staged") == 30, "the hints to be staged");

        // another reader streams 3x the region through the agent: it evicts, but not the hinted files
        for (Node.File other : files("other", 24, CHUNK)) {
            agent.stage(agent.open(other.inode(), other.key(), other.etag(), other.size()), 0, CHUNK).get();
        }
        assertTrue(index.evictions() > 0, "the region was under pressure");
        for (Node.File f : hinted) {
            assertTrue(staged(f), f.key() + " still staged");
        }
    }

    @Test
    void aNewListReplacesTheUnreadHints() throws Exception {
        start(1);
        List<Node.File> first = files("epoch1", 100, 100_000);
        List<Node.File> second = files("epoch2", 20, 100_000);
        agent.prefetch(first, true, false);
        assertEquals(32, settle(null));

        Map<String, Long> before = agent.hintCounters();
        agent.prefetch(second, true, false);
        assertEquals(20, settle(before));
        assertEquals(20, index.pinnedChunks(), "the first list's files are no longer held");
        assertTrue(store.getOrder.stream().noneMatch(k -> first.stream().skip(32).anyMatch(f -> f.key().equals(k))),
                "nothing of the first list beyond what was staged is fetched");
        for (Node.File f : second) {
            assertTrue(staged(f));
        }
    }

    @Test
    void smallFilesCountInWholePagesAndFilesTheReadersPassedByAreLetGo() throws Exception {
        start(8);
        List<Node.File> hinted = files("train", 600, 1000);
        agent.prefetch(hinted, false, false);
        // 1,000 bytes take a 64 KiB page: 4 MiB of window is 64 files
        assertEquals(64, settle(null));
        assertEquals(64, index.pinnedChunks());

        // a reader opens a file far past them: the first 64 are more than SKIP_BEHIND behind it
        Node.File far = hinted.get(599);
        agent.open(far.inode(), far.key(), far.etag(), far.size());
        assertEquals(64L, agent.hintCounters().get("skipped"));
        assertEquals(1L, agent.hintCounters().get("opened_before_staged"));
        await(() -> agent.hintCounters().get("files_staged") == 128, "the window to move past the skipped files");
        assertEquals(64, index.pinnedChunks());
        assertTrue(staged(hinted.get(127)));
    }

    @Test
    void warmStagesEveryFileAndPinsNone() throws Exception {
        start(4);
        List<Node.File> files = files("warm", 30, 200_000);
        agent.prefetch(files, false, true);
        await(() -> agent.warmCounters().get("files_staged") == 30, "warm to finish");
        assertEquals(6_000_000L, agent.warmCounters().get("bytes_staged"));
        assertEquals(0, index.pinnedChunks());
        for (Node.File f : files) {
            assertTrue(staged(f));
        }
    }

    @Test
    void aMissingObjectCountsAsFailedAndTheRestGoOn() throws Exception {
        start(2);
        List<Node.File> hinted = new ArrayList<>(files("train", 5, 1000));
        hinted.add(2, new Node.File(77, "train/gone.jpg", 1000, "v1-0", 0));
        agent.prefetch(hinted, true, false);
        await(() -> agent.hintCounters().get("files_staged") == 5, "the others to be staged");
        await(() -> agent.hintCounters().get("files_failed") == 1, "the failure to be counted");
        assertEquals(5, index.pinnedChunks());
    }

    @Test
    void aListLongerThanTheQueueIsCutAndCounted() {
        start(1);
        List<Node.File> many = new ArrayList<>();
        for (int i = 0; i < HintedPrefetcher.MAX_QUEUED + 100; i++) {
            many.add(new Node.File(1_000_000L + i, "never/fetched/" + i, 0, "e", 0)); // empty: nothing to GET
        }
        agent.prefetch(many, true, true);
        assertEquals((long) HintedPrefetcher.MAX_QUEUED + 100, agent.warmCounters().get("files"));
        assertEquals(100L, agent.warmCounters().get("files_dropped"));
    }

    @Test
    void closingLetsGoOfEveryPin() throws Exception {
        start(4);
        agent.prefetch(files("train", 10, 1000), true, false);
        await(() -> agent.hintCounters().get("files_staged") == 10, "the hints to be staged");
        agent.close();
        assertEquals(0, index.pinnedChunks());
        agent = null;
        namespace.close();
        region.close();
    }
}
