package io.os2g.agent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.os2g.Errno;
import io.os2g.staging.ExtentIndex;
import io.os2g.staging.ReservedPages;
import io.os2g.staging.StagingConfig;
import io.os2g.staging.StagingRegion;
import io.os2g.store.ObjectSummary;
import io.os2g.store.ObjectUploads;
import io.os2g.store.StoreException;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Files written through staging pages and uploaded by the agent, against a scripted store: the bytes
 * the store gets are the bytes written, a small file is one PUT, a large one a multipart upload in
 * order; a store that takes no parts holds the writer back, then fails it; a failed part aborts the
 * upload once nothing of it is in flight, and nothing is published.
 */
@Tag("unit")
class UploadsTest {

    private static final int PAGE = 64 << 10;
    private static final int PART = Uploads.FIRST_PART_SIZE;

    @TempDir
    Path tmp;
    private StagingRegion region;
    private ExtentIndex index;
    private Uploads uploads;
    private final ScriptedStore store = new ScriptedStore();

    /** Keeps parts and objects in memory; parts can be held back or made to fail. */
    private static final class ScriptedStore implements ObjectUploads {
        final Map<String, byte[]> objects = new ConcurrentHashMap<>();
        final Map<String, Map<Integer, byte[]>> parts = new ConcurrentHashMap<>();
        final List<String> calls = new CopyOnWriteArrayList<>();
        final Semaphore partsTaken = new Semaphore(Integer.MAX_VALUE);
        volatile boolean failParts;

        @Override
        public String startUpload(String key) {
            calls.add("start " + key);
            parts.put("u-" + key, new ConcurrentHashMap<>());
            return "u-" + key;
        }

        @Override
        public String uploadPart(String key, String uploadId, int partNumber, Body body) {
            partsTaken.acquireUninterruptibly();
            if (failParts) {
                throw new StoreException(StoreException.Kind.UNAVAILABLE, "server error HTTP 500", null);
            }
            parts.get(uploadId).put(partNumber, bytes(body));
            return "etag-" + partNumber;
        }

        private static byte[] bytes(Body body) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            try {
                body.writeTo(out);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
            assertEquals(body.length(), out.size(), "a body writes its length");
            return out.toByteArray();
        }

        @Override
        public ObjectSummary completeUpload(String key, String uploadId, List<String> partEtags, long size) {
            calls.add("complete " + key + " " + partEtags);
            ByteArrayOutputStream whole = new ByteArrayOutputStream();
            for (int n = 1; n <= partEtags.size(); n++) {
                whole.writeBytes(parts.get(uploadId).get(n));
            }
            objects.put(key, whole.toByteArray());
            parts.remove(uploadId);
            return new ObjectSummary(key, size, "whole", 1);
        }

        /** Aborts that fail as if the store were down, before one succeeds. */
        final java.util.concurrent.atomic.AtomicInteger abortOutages = new java.util.concurrent.atomic.AtomicInteger();

        @Override
        public void abortUpload(String key, String uploadId) {
            if (abortOutages.getAndDecrement() > 0) {
                calls.add("abort failed " + key);
                throw new StoreException(StoreException.Kind.UNREACHABLE, "connection refused", null);
            }
            calls.add("abort " + key);
            parts.remove(uploadId);
        }

        @Override
        public boolean exists(String key) {
            return objects.containsKey(key);
        }

        @Override
        public ObjectSummary putObject(String key, Body body) {
            calls.add("put " + key);
            objects.put(key, bytes(body));
            return new ObjectSummary(key, body.length(), "one", 1);
        }

        @Override
        public ObjectSummary copyObject(String from, String to, long size) {
            objects.put(to, objects.get(from));
            return new ObjectSummary(to, size, "copy", 1);
        }

        @Override
        public void deleteObject(String key) {
            objects.remove(key);
        }
    }

    private void start(long capacity, Duration waitForRoom) {
        region = StagingRegion.create(new StagingConfig(tmp.resolve("staging"), capacity, PAGE, 16L * PAGE, Duration.ofSeconds(5)));
        index = new ExtentIndex(region, PART);
        uploads = new Uploads(store, index, waitForRoom);
    }

    @AfterEach
    void stop() {
        uploads.close();
        region.close();
    }

    /** Writes {@code body} as the shim does: part by part into the pages the agent hands out. */
    private ObjectSummary write(long handle, byte[] body) {
        int number = 0;
        int at = 0;
        ReservedPages part = null;
        int filled = 0;
        while (at < body.length) {
            if (part == null || filled == part.capacity()) {
                if (part != null) {
                    uploads.partWritten(handle, part.number(), filled);
                }
                part = uploads.nextPart(handle, ++number);
                filled = 0;
            }
            int n = Math.min(body.length - at, part.capacity() - filled);
            index.view().writePages(part.pages(), filled, MemorySegment.ofArray(Arrays.copyOfRange(body, at, at + n)));
            filled += n;
            at += n;
        }
        return uploads.finish(handle, part == null ? 0 : part.number(), filled);
    }

    private static byte[] bytes(int size, int seed) {
        byte[] b = new byte[size];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    void aFileOfOnePartIsOnePutAndAnEmptyOneToo() {
        start(64L << 20, Duration.ofSeconds(5));
        byte[] body = bytes(PART - 3, 1);
        assertEquals(body.length, write(uploads.begin("a.bin"), body).size());
        assertArrayEquals(body, store.objects.get("a.bin"));
        write(uploads.begin("empty"), new byte[0]);
        assertArrayEquals(new byte[0], store.objects.get("empty"));
        assertEquals(List.of("put a.bin", "put empty"), store.calls);
        assertEquals(0, index.uploadBytes(), "every page given back");
        assertEquals(2, uploads.filesPublished());
    }

    @Test
    void aLargerFileIsAMultipartUploadOfItsPartsInOrder() {
        start(64L << 20, Duration.ofSeconds(5));
        byte[] body = bytes(3 * PART + 12345, 2);
        write(uploads.begin("big.bin"), body);
        assertArrayEquals(body, store.objects.get("big.bin"));
        assertEquals(List.of("start big.bin", "complete big.bin [etag-1, etag-2, etag-3, etag-4]"), store.calls);
        assertEquals(4, uploads.partsUploaded());
        assertEquals(body.length, uploads.bytesUploaded());
        assertEquals(0, index.uploadBytes());

        byte[] exact = bytes(2 * PART, 3);
        write(uploads.begin("exact.bin"), exact);
        assertArrayEquals(exact, store.objects.get("exact.bin"), "a file of whole parts");
    }

    @Test
    void partsGrowSoThatTenThousandReachLargeFilesWithinTheRegion() {
        start(1L << 30, Duration.ofSeconds(5));
        assertEquals(PART, uploads.partSize(1));
        assertEquals(PART, uploads.partSize(1000));
        assertEquals(2 * PART, uploads.partSize(1001));
        assertEquals(128 << 20, uploads.partSize(10_000), "capped at a quarter of half the region");
        assertTrue(uploads.largestFile() > 800L << 30, "hundreds of GiB with a 1 GiB region: " + uploads.largestFile());
        long handle = uploads.begin("huge");
        AgentException tooMany = assertThrows(AgentException.class, () -> uploads.nextPart(handle, Uploads.MAX_PARTS + 1));
        assertEquals(Errno.EFBIG, tooMany.errno());
    }

    @Test
    void aStoreThatTakesNoPartsHoldsTheWriterBackThenFailsIt() throws Exception {
        start(32L << 20, Duration.ofMillis(1500)); // two parts may wait in staging
        store.partsTaken.drainPermits(); // the store takes no part
        long handle = uploads.begin("slow.bin");
        AtomicInteger handedOut = new AtomicInteger();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread writer = Thread.ofPlatform().start(() -> {
            try {
                for (int n = 1; n <= 400; n++) {
                    ReservedPages part = uploads.nextPart(handle, n);
                    handedOut.set(n);
                    uploads.partWritten(handle, n, part.capacity());
                }
            } catch (Throwable t) {
                failure.set(t);
            }
        });
        awaitWaiting(writer);
        int reached = handedOut.get();
        // the parts in staging (in upload slots or waiting for one): two here, and the one being filled
        assertTrue(reached <= Uploads.PARTS_IN_FLIGHT + 3, "held back at part " + reached);
        assertEquals(reached, handedOut.get(), "no further while the store takes nothing");

        store.partsTaken.release(1_000_000); // the store takes parts again: the writer goes on
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (handedOut.get() < reached + 20 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertTrue(handedOut.get() >= reached + 20, "went on to part " + handedOut.get());

        store.partsTaken.drainPermits(); // and stops for good: the writer fails once no room came in time
        writer.join(10_000);
        assertFalse(writer.isAlive());
        AgentException noRoom = assertInstanceOf(AgentException.class, failure.get());
        assertEquals(Errno.EIO, noRoom.errno());
        store.partsTaken.release(1_000_000);
    }

    @Test
    void aPartThatFailsFailsTheFileAndAbortsItsUploadOnceNothingIsInFlight() throws Exception {
        start(64L << 20, Duration.ofSeconds(5));
        store.failParts = true;
        long handle = uploads.begin("lost.bin");
        // parts only, never finish: a finish that fails drops the file at once, and what is tested here
        // is a writer still holding the file when its failure shows
        AgentException failed = assertThrows(AgentException.class, () -> {
            byte[] body = bytes(PART, 4);
            for (int number = 1; number <= 100; number++) {
                ReservedPages part = uploads.nextPart(handle, number);
                index.view().writePages(part.pages(), 0, MemorySegment.ofArray(body));
                uploads.partWritten(handle, number, PART);
                Thread.sleep(10);
            }
        });
        assertEquals(Errno.EIO, failed.errno());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (!store.calls.contains("abort lost.bin") && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertTrue(store.calls.contains("abort lost.bin"), store.calls.toString());
        assertFalse(store.objects.containsKey("lost.bin"));
        assertTrue(store.parts.isEmpty(), "no parts left in the store");
        assertEquals(1, uploads.uploadsAborted());
        AgentException failedToo = assertThrows(AgentException.class, () -> uploads.nextPart(handle, 4));
        assertEquals(Errno.EIO, failedToo.errno(), "every later call");
        uploads.abort(handle); // the writer lets the file go: the part it held goes back
        assertEquals(0, index.uploadBytes());
        assertEquals(1, uploads.uploadsAborted(), "counted once");
        AgentException gone = assertThrows(AgentException.class, () -> uploads.nextPart(handle, 5));
        assertEquals(Errno.EBADF, gone.errno());
    }

    @Test
    void anAbortedFileGivesItsPagesBackAndNothingIsPublished() {
        start(64L << 20, Duration.ofSeconds(5));
        long handle = uploads.begin("dropped.bin");
        ReservedPages part = uploads.nextPart(handle, 1);
        uploads.partWritten(handle, 1, part.capacity());
        uploads.nextPart(handle, 2);
        uploads.abort(handle);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (!store.calls.contains("abort dropped.bin") && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertTrue(store.calls.contains("abort dropped.bin"));
        assertEquals(0, index.uploadBytes());
        assertFalse(store.objects.containsKey("dropped.bin"));
    }

    // an abort tried once while the store was down left the upload's parts in the store for good
    @Test
    void anAbortThatFailsInAnOutageIsTriedAgainUntilTheStoreAnswers() {
        start(64L << 20, Duration.ofSeconds(5));
        store.abortOutages.set(2);
        long handle = uploads.begin("outage.bin");
        ReservedPages part = uploads.nextPart(handle, 1);
        uploads.partWritten(handle, 1, part.capacity());
        uploads.nextPart(handle, 2);
        uploads.abort(handle);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!store.calls.contains("abort outage.bin") && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertEquals(List.of("abort failed outage.bin", "abort failed outage.bin", "abort outage.bin"),
                store.calls.stream().filter(c -> c.startsWith("abort")).toList());
        assertTrue(store.parts.isEmpty(), "no parts left in the store");
    }

    // the agent took whatever key a shim named, and overwrote or deleted whatever its shim's policy let through
    @Test
    void theAgentsPolicyHoldsWhateverTheShimAsks() {
        region = StagingRegion.create(new StagingConfig(tmp.resolve("staging"), 64L << 20, PAGE, 16L * PAGE, Duration.ofSeconds(5)));
        index = new ExtentIndex(region, PART);
        uploads = new Uploads(store, index, Duration.ofSeconds(5), "data/", AgentPolicy.of(true, false, false));
        store.objects.put("data/old.bin", new byte[] {1});
        store.objects.put("other/secret", new byte[] {2});
        assertEquals(Errno.EACCES, assertThrows(AgentException.class, () -> uploads.begin("other/new.bin")).errno());
        assertEquals(Errno.EACCES, assertThrows(AgentException.class, () -> uploads.begin("data/")).errno());
        assertEquals(Errno.EPERM, assertThrows(AgentException.class, () -> uploads.begin("data/old.bin")).errno());
        assertEquals(Errno.EACCES, assertThrows(AgentException.class, () -> uploads.delete("other/secret")).errno());
        assertEquals(Errno.EPERM, assertThrows(AgentException.class, () -> uploads.delete("data/old.bin")).errno());
        assertEquals(Errno.EPERM, assertThrows(AgentException.class, () -> uploads.move("data/old.bin", "data/moved", 1)).errno());
        assertEquals(Errno.EACCES, assertThrows(AgentException.class, () -> uploads.move("other/secret", "data/x", 1)).errno());
        write(uploads.begin("data/new.tmp"), bytes(100, 3));
        uploads.move("data/new.tmp", "data/new.bin", 100); // a file this mount wrote may be renamed into place
        assertEquals(Errno.EPERM, assertThrows(AgentException.class, () -> uploads.move("data/new.bin", "data/old.bin", 100)).errno());
        assertTrue(store.objects.containsKey("data/old.bin") && store.objects.containsKey("other/secret"));
        assertEquals(Errno.EROFS, assertThrows(AgentException.class,
                () -> new Uploads(store, index, Duration.ofSeconds(5), "", AgentPolicy.of(false, false, false)).begin("x")).errno());
    }

    /** Until {@code writer} waits inside {@code nextPart}: for room in staging. */
    private static void awaitWaiting(Thread writer) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (writer.getState() != Thread.State.WAITING && writer.getState() != Thread.State.TIMED_WAITING
                || java.util.Arrays.stream(writer.getStackTrace()).noneMatch(f -> f.getMethodName().equals("nextPart"))) {
            assertTrue(System.nanoTime() < deadline, "the writer is never held back: " + writer.getState());
            Thread.sleep(1);
        }
    }
}
