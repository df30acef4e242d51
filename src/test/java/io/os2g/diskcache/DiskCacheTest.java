package io.os2g.diskcache;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.os2g.VerifiedFile;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The disk cache's blocks: round trip, checksums, keys, eviction order and bounds, failures, sharing. */
@Tag("unit")
class DiskCacheTest {

    private static final long MIB = 1 << 20;

    @TempDir
    Path dir;
    private final List<DiskCache> opened = new ArrayList<>();

    @AfterEach
    void close() {
        opened.forEach(DiskCache::close);
    }

    private DiskCache open() {
        DiskCache cache = DiskCache.open(dir, Long.MAX_VALUE, 0);
        opened.add(cache);
        return cache;
    }

    private static byte[] bytes(int length, int seed) {
        byte[] b = new byte[length];
        new Random(seed).nextBytes(b);
        return b;
    }

    private static BlockKey key(String name, String etag, long offset, int length) {
        return new BlockKey("http://s3:9000 data", name, etag, offset, length);
    }

    private static void put(DiskCache cache, BlockKey key, byte[] data) {
        cache.admit(key, target -> {
            target.put(data);
            return true;
        });
        cache.flush(Duration.ofSeconds(10));
    }

    /** The block's bytes, or null on a miss. */
    private static byte[] get(DiskCache cache, BlockKey key) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        boolean hit = cache.read(key, in -> {
            out.reset();
            in.transferTo(out);
        });
        return hit ? out.toByteArray() : null;
    }

    @Test
    void aSourceIsReleasedOnceWhetherItsBlockIsWrittenOrAlreadyThere() {
        DiskCache cache = open();
        byte[] data = bytes(4096, 5);
        java.util.concurrent.atomic.AtomicInteger releases = new java.util.concurrent.atomic.AtomicInteger();
        DiskCache.BlockSource source = new DiskCache.BlockSource() {
            @Override
            public boolean copyTo(java.nio.ByteBuffer target) {
                target.put(data);
                return true;
            }

            @Override
            public void release() {
                releases.incrementAndGet();
            }
        };
        BlockKey key = key("a.bin", "e1", 0, data.length);
        cache.admit(key, source);
        cache.flush(Duration.ofSeconds(10));
        assertEquals(1, releases.get(), "written, then let go");
        assertArrayEquals(data, get(cache, key));
        cache.admit(key, source);
        cache.flush(Duration.ofSeconds(10));
        assertEquals(2, releases.get(), "there already: let go unused");
    }

    @Test
    void aBlockWrittenIsReadBackWholeByThisAndAnotherProcessesCache() throws IOException {
        DiskCache cache = open();
        byte[] data = bytes(3 * (int) MIB + 17, 1);
        BlockKey key = key("a/b.bin", "\"e1\"", 8 * MIB, data.length);
        assertEquals(null, get(cache, key), "a miss first");
        put(cache, key, data);
        assertArrayEquals(data, get(cache, key));
        assertArrayEquals(data, get(open(), key), "another process naming the directory finds it (a remount too)");
        assertEquals("rwx------", java.nio.file.attribute.PosixFilePermissions.toString(
                Files.getPosixFilePermissions(dir.resolve(DiskCache.LAYOUT))), "the bucket's bytes, this user's only");
        DiskCache.Counters c = cache.counters();
        assertEquals(1, c.hits());
        assertEquals(1, c.misses());
        assertEquals(data.length, c.bytesWritten());
        assertEquals(data.length, c.bytesRead());
    }

    @Test
    void aReadMarksItsBlockUsedUnlessItsMarkIsRecentAndAVerifiedFileHoldsExactlyTheBytes() throws IOException {
        DiskCache cache = open();
        byte[] data = bytes(70_000, 4);
        BlockKey old = key("old", "e", 0, data.length), recent = key("recent", "e", 0, data.length);
        put(cache, old, data);
        put(cache, recent, data);
        long now = System.currentTimeMillis();
        Files.setLastModifiedTime(cache.path(old), FileTime.fromMillis(now - 3_600_000));
        Files.setLastModifiedTime(cache.path(recent), FileTime.fromMillis(now - 10_000));

        assertArrayEquals(data, get(cache, old));
        assertTrue(Files.getLastModifiedTime(cache.path(old)).toMillis() >= now - 1000, "an hour-old mark renewed");
        Path file = cache.verifiedFile(recent).path();
        assertEquals(now - 10_000, Files.getLastModifiedTime(cache.path(recent)).toMillis(), "a recent mark left alone");
        assertArrayEquals(data, Files.readAllBytes(file), "the block file is the bytes, nothing else");
        assertEquals(2, cache.counters().hits());

        Files.setLastModifiedTime(cache.path(old), FileTime.fromMillis(now - 3_600_000));
        VerifiedFile served = cache.verifiedFile(old);
        assertEquals(asItIs(cache.path(old)), served, "as it is once its mark is renewed");
        Files.setLastModifiedTime(cache.path(old), FileTime.fromMillis(now - 3_600_000));
        served = cache.verifiedFile(old);
        assertEquals(asItIs(cache.path(old)), served, "so again, remembered as verified");
    }

    @Test
    void anotherVersionOrRangeOrStoreIsAnotherBlock() {
        DiskCache cache = open();
        byte[] data = bytes(1000, 2);
        put(cache, key("k", "\"e1\"", 0, 1000), data);
        assertEquals(null, get(cache, key("k", "\"e2\"", 0, 1000)), "a changed object (new ETag) is never served old bytes");
        assertEquals(null, get(cache, key("k", "\"e1\"", 0, 999)), "another chunk size asks another range");
        assertEquals(null, get(cache, new BlockKey("http://other:9000 data", "k", "\"e1\"", 0, 1000)));
        assertNotEquals(key("k", "\"e1\"", 0, 1000).fileName(), key("k", "\"e2\"", 0, 1000).fileName());
    }

    @Test
    void aFlippedByteATruncationOrAnotherKeysFileIsDroppedCountedAndNeverServed() throws IOException {
        DiskCache cache = open();
        byte[] data = bytes(200_000, 3);
        BlockKey flipped = key("flipped", "e", 0, data.length);
        BlockKey cut = key("cut", "e", 0, data.length);
        BlockKey moved = key("moved", "e", 0, data.length);
        put(cache, flipped, data);
        put(cache, cut, data);
        put(cache, moved, data);

        Path f = cache.path(flipped);
        flipByte(f, 1000);
        try (FileChannel ch = FileChannel.open(cache.path(cut), StandardOpenOption.WRITE)) {
            ch.truncate(ch.size() - 1);
        }
        BlockKey other = key("other", "e", 0, data.length);
        Files.createDirectories(cache.path(other).getParent());
        Files.copy(cache.path(moved), cache.path(other), java.nio.file.StandardCopyOption.REPLACE_EXISTING);

        assertEquals(null, get(cache, flipped));
        assertFalse(Files.exists(f), "dropped");
        assertEquals(null, get(cache, cut));
        assertEquals(null, get(cache, other), "a file of another key under this key's name");
        assertEquals(3, cache.counters().corrupt());
        assertArrayEquals(data, get(cache, moved), "the good one still served");
        put(cache, flipped, data);
        assertArrayEquals(data, get(cache, flipped), "written again once fetched again");
    }

    @Test
    void aBlockHandedToTheKernelOnceIsVerifiedAgainWhenItsFileChangesOrIsReplaced() throws IOException {
        DiskCache cache = open();
        byte[] data = bytes(100_000, 4);
        BlockKey flipped = key("flipped", "e", 0, data.length);
        BlockKey replaced = key("replaced", "e", 0, data.length);
        BlockKey other = key("other", "e", 0, data.length);
        put(cache, flipped, data);
        put(cache, replaced, data);
        put(cache, other, data);
        assertEquals(asItIs(cache.path(flipped)), cache.verifiedFile(flipped));
        assertEquals(asItIs(cache.path(replaced)), cache.verifiedFile(replaced));
        assertEquals(asItIs(cache.path(flipped)), cache.verifiedFile(flipped), "unchanged: handed on again");

        flipByte(cache.path(flipped), 10); // a write in place: the file's change time moves
        Path copy = dir.resolve("other.blk");
        Files.copy(cache.path(other), copy);
        Files.move(copy, cache.path(replaced), java.nio.file.StandardCopyOption.REPLACE_EXISTING); // another inode

        assertEquals(null, cache.verifiedFile(flipped), "changed since it was verified");
        assertEquals(null, cache.verifiedFile(replaced), "another key's file put in its place");
        assertEquals(2, cache.counters().corrupt());
    }

    @Test
    void aBlockThisCacheWroteIsHandedOnUnreadWhileItIsUnchangedAndOneWrittenElsewhereIsReadOnce() throws IOException {
        DiskCache cache = open();
        byte[] data = bytes(100_000, 5);
        BlockKey written = key("written", "e", 0, data.length);
        put(cache, written, data);
        VerifiedFile served = cache.verifiedFile(written);
        assertEquals(asItIs(cache.path(written)), served);
        assertEquals(0, cache.verifications(), "its bytes are the ones it wrote");

        DiskCache another = open(); // another process on the same directory
        assertEquals(served, another.verifiedFile(written));
        assertEquals(served, another.verifiedFile(written));
        assertEquals(1, another.verifications(), "read whole once, then remembered");

        flipByte(cache.path(written), 10);
        assertEquals(null, cache.verifiedFile(written), "changed since it was written");
        assertEquals(1, cache.verifications());
    }

    /** {@code file} as stat(2) finds it now. */
    private static VerifiedFile asItIs(Path file) throws IOException {
        return VerifiedFile.of(file, Files.readAttributes(file, VerifiedFile.ATTRIBUTES));
    }

    /** Flips one bit of the byte {@code fromEnd} bytes before the end of {@code file}, in place. */
    private static void flipByte(Path file, long fromEnd) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer one = ByteBuffer.allocate(1);
            ch.read(one, ch.size() - fromEnd);
            one.put(0, (byte) (one.get(0) ^ 0x40)).rewind();
            ch.write(one, ch.size() - fromEnd);
        }
    }

    @Test
    void aSweepDeletesTheLeastRecentlyUsedBlocksFirstDownToTheBound() throws IOException {
        Path blocks = dir.resolve("blocks"), tmp = dir.resolve("tmp");
        Files.createDirectories(tmp);
        long now = System.currentTimeMillis();
        for (int i = 0; i < 10; i++) {
            Path shard = Files.createDirectories(blocks.resolve(String.format("%02x", i)));
            Path b = Files.write(shard.resolve("b" + i + ".blk"), new byte[(int) MIB]);
            Files.setLastModifiedTime(b, FileTime.fromMillis(now - (10 - i) * 60_000L)); // b0 the least recently used
        }
        Sweeper sweeper = new Sweeper(blocks, tmp, 7 * MIB, 0, space(1L << 40, 1L << 39));
        assertEquals(4, sweeper.sweep(), "10 MiB over a 7 MiB bound: down to 90% of it, 6 MiB");
        List<String> left = sweeper.list().stream().map(b -> b.path().getFileName().toString()).sorted().toList();
        assertEquals(List.of("b4.blk", "b5.blk", "b6.blk", "b7.blk", "b8.blk", "b9.blk"), left);
        assertEquals(0, sweeper.sweep(), "within its bound: nothing");
        assertEquals(4, sweeper.evictions());
    }

    @Test
    void aSweepKeepsTheFloorOfFreeSpace() throws IOException {
        Path blocks = dir.resolve("blocks"), tmp = dir.resolve("tmp");
        Files.createDirectories(tmp);
        for (int i = 0; i < 4; i++) {
            Path shard = Files.createDirectories(blocks.resolve("0" + i));
            Files.setLastModifiedTime(Files.write(shard.resolve("b" + i + ".blk"), new byte[(int) (32 * MIB)]),
                    FileTime.fromMillis(1000L * i));
        }
        // a 10 GiB disk keeping 5% (512 MiB) free, with 500 MiB usable: 12 MiB under the floor
        long total = 10L << 30;
        Sweeper sweeper = new Sweeper(blocks, tmp, Long.MAX_VALUE, 5, space(total, 500 * MIB));
        assertTrue(sweeper.roomAboveFloor() < 0);
        assertEquals(3, sweeper.sweep(), "the oldest until 64 MiB above the floor: 12 + 64 MiB = three 32 MiB blocks");
    }

    @Test
    void aDirectoryThatCannotBeACacheIsRefusedWithOneLine() throws IOException {
        Path file = Files.writeString(dir.resolve("a-file"), "x");
        DiskCache.CacheDirectoryException e = assertThrows(DiskCache.CacheDirectoryException.class,
                () -> DiskCache.open(file.resolve("cache"), Long.MAX_VALUE, 5));
        assertTrue(e.getMessage().startsWith("cache directory " + file.resolve("cache") + " cannot be used: "), e.getMessage());
        e = assertThrows(DiskCache.CacheDirectoryException.class, () -> DiskCache.open(dir, Long.MAX_VALUE, 99));
        assertTrue(e.getMessage().contains("needs at least 64 MiB") || e.getMessage().contains("MiB above"), e.getMessage());
    }

    @Test
    void aWriteThatFailsPausesAdmissionAndReadsGoOnAsMisses() throws IOException {
        DiskCache cache = open();
        BlockKey key = key("k", "e", 0, 100);
        Path blocks = dir.resolve(DiskCache.LAYOUT).resolve("blocks");
        // the blocks directory replaced by a file: no block can be written under it
        deleteTree(blocks);
        Files.writeString(blocks, "not a directory");
        put(cache, key, bytes(100, 4));
        assertEquals(1, cache.counters().writeErrors());
        assertEquals(null, get(cache, key));
        put(cache, key("k2", "e", 0, 100), bytes(100, 5));
        assertEquals(1, cache.counters().notAdmitted(), "paused after the failure");
    }

    @Test
    void theDirectoryDeletedUnderARunningCacheIsLaidOutAgainAndBlocksKeptAfterward() throws IOException {
        DiskCache cache = open();
        deleteTree(dir.resolve(DiskCache.LAYOUT));
        byte[] data = bytes(5000, 6);
        BlockKey key = key("k", "e", 0, data.length);
        assertEquals(null, get(cache, key), "a miss, not a failure");
        put(cache, key, data);
        assertArrayEquals(data, get(cache, key));
    }

    @Test
    void twoCachesOnOneDirectoryWritingAndReadingTheSameBlocksAtOnceServeOnlyWholeBlocks() throws Exception {
        DiskCache a = open(), b = open();
        int blocks = 24;
        byte[][] data = new byte[blocks][];
        for (int i = 0; i < blocks; i++) {
            data[i] = bytes(64 * 1024 + i, 100 + i);
        }
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> all = new ArrayList<>();
            for (DiskCache cache : List.of(a, b)) {
                all.add(pool.submit(() -> {
                    for (int round = 0; round < 20; round++) {
                        for (int i = 0; i < blocks; i++) {
                            BlockKey k = key("f" + i, "e", 0, data[i].length);
                            byte[] got = get(cache, k);
                            if (got != null) {
                                assertArrayEquals(data[i], got);
                            } else {
                                byte[] d = data[i];
                                cache.admit(k, t -> {
                                    t.put(d);
                                    return true;
                                });
                            }
                        }
                    }
                    cache.flush(Duration.ofSeconds(10));
                    return null;
                }));
            }
            for (Future<?> f : all) {
                f.get();
            }
        } finally {
            pool.shutdown();
        }
        for (int i = 0; i < blocks; i++) {
            assertArrayEquals(data[i], get(a, key("f" + i, "e", 0, data[i].length)));
        }
        assertEquals(0, a.counters().corrupt() + b.counters().corrupt());
    }

    private static Sweeper.Space space(long total, long usable) {
        return new Sweeper.Space() {
            @Override
            public long total() {
                return total;
            }

            @Override
            public long usable() {
                return usable;
            }
        };
    }

    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (var walk = Files.walk(root)) {
            for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }
}
