package io.os2g.staging;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("unit")
class ExtentIndexTest {

    private static final int PAGE = 64 * 1024;

    @TempDir
    Path tmp;

    private StagingRegion region;

    private ExtentIndex index(long capacity, Duration reserveTimeout) {
        region = StagingRegion.create(new StagingConfig(tmp.resolve("staging"), capacity, PAGE, 4L * PAGE, reserveTimeout));
        return new ExtentIndex(region, capacity);
    }

    @AfterEach
    void close() {
        if (region != null) {
            region.close();
        }
    }

    static byte[] pattern(int length, int seed) {
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) {
            b[i] = (byte) (seed * 131 + i * 7 + (i >>> 11));
        }
        return b;
    }

    static void stage(ExtentIndex index, ChunkKey key, String etag, byte[] body) throws IOException {
        Reservation r = index.reserve(body.length);
        r.fill(new ByteArrayInputStream(body));
        r.publish(key, etag);
    }

    static byte[] read(ExtentIndex index, StagedChunk chunk, long offset, int length) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment target = arena.allocate(length);
            index.view().copyOut(chunk, offset, target, 0, length);
            return target.toArray(ValueLayout.JAVA_BYTE);
        }
    }

    @Test
    void aSocketThatTakesNoMoreNowGetsTheRestThroughABuffer() throws Exception {
        ExtentIndex index = index(128L * PAGE, Duration.ofSeconds(1));
        Reservation part = index.reserveForUpload(100 * PAGE);
        byte[] bytes = new byte[100 * PAGE];
        new java.util.Random(9).nextBytes(bytes);
        index.view().writePages(part.pages(), 0, MemorySegment.ofArray(bytes));
        try (java.nio.channels.ServerSocketChannel server = java.nio.channels.ServerSocketChannel.open()
                .bind(new java.net.InetSocketAddress("127.0.0.1", 0));
             java.nio.channels.SocketChannel client = java.nio.channels.SocketChannel.open(server.getLocalAddress());
             java.nio.channels.SocketChannel peer = server.accept()) {
            client.configureBlocking(false); // as a socket a virtual thread has used: sendfile returns 0 when it is full
            java.util.concurrent.CompletableFuture<byte[]> received = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try {
                    Thread.sleep(200); // the socket's buffers fill first
                    java.io.ByteArrayOutputStream got = new java.io.ByteArrayOutputStream();
                    java.nio.ByteBuffer buffer = java.nio.ByteBuffer.allocate(1 << 16);
                    while (got.size() < bytes.length) {
                        int n = peer.read(buffer.clear());
                        if (n < 0) {
                            break;
                        }
                        got.write(buffer.array(), 0, n);
                    }
                    return got.toByteArray();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            part.transferTo(0, bytes.length, client);
            assertArrayEquals(bytes, received.get(10, java.util.concurrent.TimeUnit.SECONDS));
        }
        part.cancel();
    }

    @Test
    void anUploadsPagesTakeWritesAnywhereAndSendTheirBytesInOrder() throws Exception {
        ExtentIndex index = index(16L * PAGE, Duration.ofSeconds(1));
        // scatter the free pages: the next reservation's runs cross segments and skip pages
        Reservation a = index.reserveForUpload(3 * PAGE);
        Reservation b = index.reserveForUpload(2 * PAGE);
        a.cancel();
        Reservation part = index.reserveForUpload(5 * PAGE + 123);
        assertEquals(6L * PAGE, index.uploadBytes() - 2L * PAGE);
        byte[] bytes = new byte[5 * PAGE + 123];
        new java.util.Random(8).nextBytes(bytes);
        int[] pages = part.pages();
        for (int at = 0; at < bytes.length; at += 1000) { // odd-sized writes, across page boundaries
            int n = Math.min(1000, bytes.length - at);
            index.view().writePages(pages, at, MemorySegment.ofArray(java.util.Arrays.copyOfRange(bytes, at, at + n)));
        }
        java.nio.file.Path out = tmp.resolve("sent");
        try (java.nio.channels.FileChannel sink = java.nio.channels.FileChannel.open(out,
                java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.WRITE)) {
            part.transferTo(100, bytes.length - 100, sink);
        }
        assertArrayEquals(java.util.Arrays.copyOfRange(bytes, 100, bytes.length), java.nio.file.Files.readAllBytes(out));
        byte[] copied = new byte[bytes.length];
        part.copyOut(0, MemorySegment.ofArray(copied));
        assertArrayEquals(bytes, copied);
        assertThrows(IndexOutOfBoundsException.class, () -> index.view().writePages(pages, 6L * PAGE - 10, MemorySegment.ofArray(new byte[20])));
        part.cancel();
        b.cancel();
        assertEquals(0, index.uploadBytes(), "every upload page given back");
        assertEquals(0, index.inFlightBytes(), "counted apart from fetches");
    }

    @Test
    void stagedBytesReadBackAcrossPageAndSegmentBoundaries() throws IOException {
        ExtentIndex index = index(16L * PAGE, Duration.ofSeconds(1));
        byte[] body = pattern(5 * PAGE + 123, 1); // spans two segments of 4 pages
        ChunkKey key = new ChunkKey(7, 0);
        stage(index, key, "e1", body);
        StagedChunk chunk = index.view().acquire(key, "e1");
        assertNotNull(chunk);
        assertArrayEquals(body, read(index, chunk, 0, body.length));
        byte[] middle = new byte[PAGE + 10];
        System.arraycopy(body, PAGE - 5, middle, 0, middle.length);
        assertArrayEquals(middle, read(index, chunk, PAGE - 5, middle.length));
        index.view().release(chunk);
    }

    @Test
    void aPipeRefersToThePagesItself_soTheReplyKeepsItsPinUntilThePipeIsRead() throws Exception {
        ExtentIndex index = index(2L * PAGE, Duration.ofMillis(300));
        byte[] first = pattern(2 * PAGE, 1);
        byte[] second = pattern(2 * PAGE, 2);
        stage(index, new ChunkKey(1, 0), "e", first);
        try (TestPipe pipe = new TestPipe(4 * PAGE); Arena arena = Arena.ofConfined()) {
            MemorySegment piped = arena.allocate(first.length);
            StagedChunk chunk = index.view().acquire(new ChunkKey(1, 0), "e");
            assertTrue(index.view().spliceOut(chunk, 0, pipe.writeEnd(), first.length));
            // pinned: the pages cannot be reused, so the next chunk finds no room
            assertThrows(StagingException.class, () -> stage(index, new ChunkKey(2, 0), "e", second));
            pipe.readFully(piped, first.length);
            assertArrayEquals(first, piped.toArray(ValueLayout.JAVA_BYTE));
            index.view().release(chunk);

            // the hazard the pin guards against: pages reused in place change under a pipe that outlived its pin
            chunk = index.view().acquire(new ChunkKey(1, 0), "e");
            assertTrue(index.view().spliceOut(chunk, 0, pipe.writeEnd(), first.length));
            index.view().release(chunk);
            stage(index, new ChunkKey(2, 0), "e", second); // evicts key 1 and overwrites its two pages
            pipe.readFully(piped, first.length);
            assertArrayEquals(second, piped.toArray(ValueLayout.JAVA_BYTE));
        }
        assertArrayEquals(second, read(index, index.view().acquire(new ChunkKey(2, 0), "e"), 0, second.length));
    }

    /** ramfs cannot punch holes; staging never needs to (root only: it mounts ramfs). */
    @Test
    void aStagingFileSystemWithoutHolePunchingStagesAndSplices() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue("root".equals(System.getProperty("user.name")), "mounting ramfs needs root");
        Path ramfs = java.nio.file.Files.createDirectory(tmp.resolve("ramfs"));
        org.junit.jupiter.api.Assumptions.assumeTrue(
                new ProcessBuilder("mount", "-t", "ramfs", "none", ramfs.toString()).inheritIO().start().waitFor() == 0, "ramfs");
        try {
            StagingRegion onRamfs = StagingRegion.create(new StagingConfig(ramfs.resolve("s"), 2L * PAGE, PAGE, 2L * PAGE, Duration.ofSeconds(1)));
            try {
                ExtentIndex index = new ExtentIndex(onRamfs, 2L * PAGE);
                for (int k = 0; k < 3; k++) { // the third evicts: pages overwritten where they are
                    byte[] body = pattern(PAGE + 10, k);
                    stage(index, new ChunkKey(k, 0), "e", body);
                    StagedChunk chunk = index.view().acquire(new ChunkKey(k, 0), "e");
                    assertArrayEquals(body, read(index, chunk, 0, body.length));
                    try (TestPipe pipe = new TestPipe(4 * PAGE); Arena arena = Arena.ofConfined()) {
                        assertTrue(index.view().spliceOut(chunk, 0, pipe.writeEnd(), body.length));
                        MemorySegment piped = arena.allocate(body.length);
                        pipe.readFully(piped, body.length);
                        assertArrayEquals(body, piped.toArray(ValueLayout.JAVA_BYTE));
                    }
                    index.view().release(chunk);
                }
            } finally {
                onRamfs.close();
            }
        } finally {
            new ProcessBuilder("umount", ramfs.toString()).inheritIO().start().waitFor();
        }
    }

    @Test
    void aSmallFileTakesPagesNotAChunk() throws IOException {
        ExtentIndex index = index(16L * PAGE, Duration.ofSeconds(1));
        for (int i = 0; i < 8; i++) {
            stage(index, new ChunkKey(i, 0), "e", pattern(125_000, i)); // two pages each
        }
        assertEquals(8, index.stagedChunks());
        assertEquals(0, index.freeBytes());
        assertEquals(0, index.evictions());
    }

    @Test
    void anotherVersionIsAMiss() throws IOException {
        ExtentIndex index = index(8L * PAGE, Duration.ofSeconds(1));
        stage(index, new ChunkKey(1, 0), "old", pattern(100, 1));
        assertNull(index.view().acquire(new ChunkKey(1, 0), "new"));
        stage(index, new ChunkKey(1, 0), "new", pattern(100, 2));
        StagedChunk chunk = index.view().acquire(new ChunkKey(1, 0), "new");
        assertArrayEquals(pattern(100, 2), read(index, chunk, 0, 100));
        index.view().release(chunk);
        assertEquals(7L * PAGE, index.freeBytes()); // the replaced version's page came back
    }

    @Test
    void evictionSkipsPinnedChunksAndSparesRecentlyReadOnes() throws IOException {
        ExtentIndex index = index(4L * PAGE, Duration.ofMillis(200));
        ChunkKey a = new ChunkKey(1, 0);
        ChunkKey b = new ChunkKey(2, 0);
        ChunkKey c = new ChunkKey(3, 0);
        ChunkKey d = new ChunkKey(4, 0);
        stage(index, a, "e", pattern(PAGE, 1));
        stage(index, b, "e", pattern(PAGE, 2));
        stage(index, c, "e", pattern(PAGE, 3));
        stage(index, d, "e", pattern(PAGE, 4));
        StagedChunk pinned = index.view().acquire(a, "e"); // pinned: must survive
        index.view().release(index.view().acquire(b, "e")); // read once: gets a second chance
        stage(index, new ChunkKey(5, 0), "e", pattern(PAGE, 5));
        assertTrue(index.view().contains(a, "e"));
        assertTrue(index.view().contains(b, "e"));
        assertFalse(index.view().contains(c, "e"), "the oldest unreferenced, unpinned chunk goes first");
        assertArrayEquals(pattern(PAGE, 1), read(index, pinned, 0, PAGE));
        index.view().release(pinned);
    }

    @Test
    void chunksASequentialReaderMovedPastGoFirstUnlessReadAgain() throws IOException {
        ExtentIndex index = index(4L * PAGE, Duration.ofMillis(200));
        ChunkKey image = new ChunkKey(1, 0);
        stage(index, image, "e", pattern(PAGE, 1)); // the oldest, unread: the clock's first choice
        ChunkKey shard0 = new ChunkKey(2, 0);
        ChunkKey shard1 = new ChunkKey(2, 1);
        ChunkKey shard2 = new ChunkKey(2, 2);
        stage(index, shard0, "e", pattern(PAGE, 2));
        stage(index, shard1, "e", pattern(PAGE, 3));
        stage(index, shard2, "e", pattern(PAGE, 4));
        index.view().release(index.view().acquire(shard0, "e"));
        index.view().release(index.view().acquire(shard1, "e"));
        index.consumed(shard0);
        index.consumed(shard1);
        index.view().release(index.view().acquire(shard1, "e")); // read again after: no longer first to go

        stage(index, new ChunkKey(2, 3), "e", pattern(PAGE, 5)); // room for one: the consumed chunk goes
        stage(index, new ChunkKey(2, 4), "e", pattern(PAGE, 6)); // then the clock's choice: the oldest unread
        // (looked at only now: a look is a read, which would give the chunk a second chance)
        assertFalse(index.view().contains(shard0, "e"), "consumed, so gone first");
        assertFalse(index.view().contains(image, "e"), "the clock's choice");
        assertTrue(index.view().contains(shard1, "e"), "read again since it was consumed: the clock's to judge");
        assertTrue(index.view().contains(shard2, "e"));
        assertEquals(2, index.evictions());
    }
    @Test
    void whenEveryPageIsPinnedReserveWaitsThenFailsInsteadOfHanging() throws IOException {
        ExtentIndex index = index(2L * PAGE, Duration.ofMillis(300));
        stage(index, new ChunkKey(1, 0), "e", pattern(2 * PAGE, 1));
        StagedChunk pinned = index.view().acquire(new ChunkKey(1, 0), "e");
        long t0 = System.nanoTime();
        StagingException e = assertThrows(StagingException.class, () -> index.reserve(PAGE));
        assertTrue(System.nanoTime() - t0 >= Duration.ofMillis(250).toNanos());
        assertTrue(e.getMessage().contains("full"), e.getMessage());
        index.view().release(pinned);
        index.reserve(PAGE).cancel(); // space again once unpinned
    }

    @Test
    void pinnedChunksAndInFlightBytesAreCountedUntilReleasedPublishedOrCancelled() throws IOException {
        ExtentIndex index = index(8L * PAGE, Duration.ofSeconds(1));
        Reservation fetching = index.reserve(PAGE + 1);
        Reservation failing = index.reserve(PAGE);
        assertEquals(3L * PAGE, index.inFlightBytes());
        fetching.fill(new ByteArrayInputStream(pattern(PAGE + 1, 2)));
        fetching.publish(new ChunkKey(1, 0), "e");
        failing.cancel();
        assertEquals(0, index.inFlightBytes());
        StagedChunk a = index.view().acquire(new ChunkKey(1, 0), "e");
        StagedChunk b = index.view().acquire(new ChunkKey(1, 0), "e");
        assertEquals(1, index.pinnedChunks());
        index.view().release(a);
        assertEquals(1, index.pinnedChunks(), "two readers, one gone");
        index.view().release(b);
        assertEquals(0, index.pinnedChunks());
        assertEquals(1, index.stagedChunks());
    }

    @Test
    void aChunkLargerThanTheRegionIsRefusedAtOnce() {
        ExtentIndex index = index(2L * PAGE, Duration.ofSeconds(5));
        assertThrows(StagingException.class, () -> index.reserve(3 * PAGE));
    }

    @Test
    void aTruncatedBodyFailsTheFillAndCancelReturnsThePages() {
        ExtentIndex index = index(4L * PAGE, Duration.ofSeconds(1));
        Reservation r = index.reserve(PAGE + 1);
        assertThrows(EOFException.class, () -> r.fill(new ByteArrayInputStream(new byte[PAGE])));
        r.cancel();
        assertEquals(4L * PAGE, index.freeBytes());
    }

    /** A body as the agent's own GET sockets give it: a stream that is a channel too, read a little at a time. */
    private static final class ChannelBody extends ByteArrayInputStream implements java.nio.channels.ReadableByteChannel {
        private final int maxRead;
        int channelReads;
        int streamBytes;

        ChannelBody(byte[] body) {
            this(body, 1000);
        }

        ChannelBody(byte[] body, int maxRead) {
            super(body);
            this.maxRead = maxRead;
        }

        @Override
        public int read(java.nio.ByteBuffer target) {
            channelReads++;
            int n = Math.min(Math.min(target.remaining(), maxRead), available());
            if (n == 0) {
                return -1;
            }
            target.put(buf, pos, n);
            pos += n;
            return n;
        }

        @Override
        public synchronized int read() {
            streamBytes++;
            return super.read();
        }

        @Override
        public synchronized int read(byte[] b, int off, int len) {
            streamBytes += len;
            return super.read(b, off, len);
        }

        @Override
        public boolean isOpen() {
            return true;
        }
    }

    @Test
    void aBodyThatIsAChannelIsStagedThroughNativeMemoryAndMustBeExactlyTheLength() throws IOException {
        ExtentIndex index = index(16L * PAGE, Duration.ofSeconds(1));
        byte[] body = pattern(5 * PAGE + 123, 4);
        ChannelBody in = new ChannelBody(body);
        Reservation r = index.reserve(body.length);
        r.fill(in);
        r.publish(new ChunkKey(9, 0), "e");
        assertTrue(in.channelReads >= body.length / 1000, "read as a channel: " + in.channelReads);
        assertEquals(1, in.streamBytes, "as a stream only to see that it ends");
        StagedChunk chunk = index.view().acquire(new ChunkKey(9, 0), "e");
        try {
            assertArrayEquals(body, read(index, chunk, 0, body.length));
        } finally {
            index.view().release(chunk);
        }
        Reservation shortOne = index.reserve(PAGE + 1);
        assertThrows(EOFException.class, () -> shortOne.fill(new ChannelBody(new byte[PAGE])));
        shortOne.cancel();
        Reservation longOne = index.reserve(PAGE);
        IOException e = assertThrows(IOException.class, () -> longOne.fill(new ChannelBody(new byte[PAGE + 1])));
        assertTrue(e.getMessage().contains("longer than requested"), e.getMessage());
        longOne.cancel();
    }

    @Test
    void aReadSpanningManyPagesLandsInEachOfThemWhereverTheyLie() throws IOException {
        ExtentIndex index = index(16L * PAGE, Duration.ofSeconds(1));
        // pages 0-1, 2-4 and 5-6 taken, the first and last given back: the next reservation's pages
        // lie in two runs with a taken run between them, and across a segment's end (4 pages each)
        Reservation first = index.reserve(2 * PAGE);
        Reservation middle = index.reserve(3 * PAGE);
        Reservation last = index.reserve(2 * PAGE);
        first.cancel();
        last.cancel();
        byte[] body = pattern(12 * PAGE + 77, 5);
        Reservation r = index.reserve(body.length);
        assertTrue(java.util.stream.IntStream.range(1, r.pages().length).anyMatch(i -> r.pages()[i] != r.pages()[i - 1] + 1),
                "pages in more than one run: " + java.util.Arrays.toString(r.pages()));
        ChannelBody in = new ChannelBody(body, Integer.MAX_VALUE);
        r.fill(in);
        r.publish(new ChunkKey(11, 0), "e");
        assertEquals((body.length + FillBufferPool.SIZE - 1) / FillBufferPool.SIZE, in.channelReads,
                "read in steps of a fill buffer (" + FillBufferPool.SIZE + " bytes), not page by page");
        StagedChunk chunk = index.view().acquire(new ChunkKey(11, 0), "e");
        try {
            assertArrayEquals(body, read(index, chunk, 0, body.length));
            assertArrayEquals(java.util.Arrays.copyOfRange(body, PAGE - 5, 3 * PAGE + 9), read(index, chunk, PAGE - 5, 2 * PAGE + 14));
        } finally {
            index.view().release(chunk);
        }
        middle.cancel();
    }

    @Test
    void stagingDirIs0700AndSegmentFiles0600AndCloseRemovesThem() throws IOException {
        index(8L * PAGE, Duration.ofSeconds(1));
        Path dir = tmp.resolve("staging");
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir)));
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve("segment-0000"))));
        region.close();
        region = null;
        assertFalse(Files.exists(dir));
    }

    @Test
    void aDeadOwnersStagingDirIsReclaimedAndALiveOnesIsRefused() throws IOException {
        Path dir = Files.createDirectories(tmp.resolve("staging"));
        Files.writeString(dir.resolve("owner.pid"), "999999999");
        Files.writeString(dir.resolve("segment-0000"), "left by a crash");
        index(8L * PAGE, Duration.ofSeconds(1));
        assertEquals(Long.toString(ProcessHandle.current().pid()), Files.readString(dir.resolve("owner.pid")));
        region.close();
        region = null;

        Files.createDirectories(dir);
        Files.writeString(dir.resolve("owner.pid"), Long.toString(ProcessHandle.current().parent().orElseThrow().pid()));
        StagingException e = assertThrows(StagingException.class, () -> index(8L * PAGE, Duration.ofSeconds(1)));
        assertTrue(e.getMessage().contains("in use"), e.getMessage());
    }

    @Test
    void aChunkPublishedEarlyIsReadableUpToWhatHasArrivedAndWholeOnlyOncePublished() throws Exception {
        ExtentIndex index = index(16L * PAGE, Duration.ofSeconds(1));
        byte[] body = pattern(3 * PAGE + 100, 4);
        ChunkKey key = new ChunkKey(7, 0);
        Reservation r = index.reserve(body.length);
        java.util.List<Long> progress = new java.util.concurrent.CopyOnWriteArrayList<>();
        r.publishEarly(key, "e1", progress::add);
        assertNull(index.view().acquire(key, "e1", 1), "findable, but nothing arrived yet");
        var rest = new java.util.concurrent.CountDownLatch(1);
        var filling = java.util.concurrent.CompletableFuture.runAsync(() -> {
            try {
                r.fill(new io.os2g.support.PausingBody(body, PAGE, rest));
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        for (long deadline = System.nanoTime() + 5_000_000_000L; progress.isEmpty() && System.nanoTime() < deadline; ) {
            Thread.sleep(1);
        }
        assertEquals(java.util.List.of((long) PAGE), progress);
        StagedChunk head = index.view().acquire(key, "e1", PAGE);
        assertNotNull(head, "the first page arrived");
        assertArrayEquals(java.util.Arrays.copyOf(body, PAGE), read(index, head, 0, PAGE));
        index.view().release(head);
        assertNull(index.view().acquire(key, "e1", PAGE + 1), "beyond what arrived");
        assertNull(index.view().acquire(key, "e1"), "not staged whole yet");
        assertFalse(index.view().contains(key, "e1"));
        assertEquals(0, index.evictAll(), "a chunk being filled is never evicted");
        rest.countDown();
        filling.get(5, java.util.concurrent.TimeUnit.SECONDS);
        assertNull(index.view().acquire(key, "e1"), "its last bytes wait for publish (the body's end is checked first)");
        r.publish(key, "e1");
        StagedChunk whole = index.view().acquire(key, "e1");
        assertNotNull(whole);
        assertArrayEquals(body, read(index, whole, 0, body.length));
        index.view().release(whole);
        assertEquals(0, index.inFlightBytes());
        assertEquals(0, index.pinnedChunks());
        assertEquals(1, index.evictAll(), "published: an ordinary staged chunk");
    }

    @Test
    void aFailedEarlyChunkIsFoundByNobodyAndAReaderHoldingItKeepsItsBytes() throws Exception {
        ExtentIndex index = index(8L * PAGE, Duration.ofMillis(200));
        byte[] body = pattern(4 * PAGE, 5);
        ChunkKey key = new ChunkKey(8, 2);
        Reservation r = index.reserve(body.length);
        r.publishEarly(key, "e1", n -> { });
        assertThrows(EOFException.class, () -> r.fill(new ByteArrayInputStream(body, 0, 2 * PAGE)));
        StagedChunk held = index.view().acquire(key, "e1", 2 * PAGE);
        assertNotNull(held);
        r.cancel();
        assertNull(index.view().acquire(key, "e1", 1), "retired: nobody finds it again");
        assertEquals(0, index.inFlightBytes());
        // the pages it held stay until the reader lets go: a region this size has room for one more chunk of 4 pages
        Reservation other = index.reserve(4 * PAGE);
        assertThrows(StagingException.class, () -> index.reserve(4 * PAGE));
        assertArrayEquals(java.util.Arrays.copyOf(body, 2 * PAGE), read(index, held, 0, 2 * PAGE));
        index.view().release(held);
        other.cancel();
        index.reserve(8 * PAGE).cancel(); // all of it free again once the reader let go
        stage(index, key, "e1", body); // and fetched again, it is staged like any chunk
        StagedChunk again = index.view().acquire(key, "e1");
        assertArrayEquals(body, read(index, again, 0, body.length));
        index.view().release(again);
    }
}
