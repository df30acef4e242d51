package io.os2g.runtime;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.os2g.agent.AgentConfig;
import io.os2g.fuse.MountTable;
import io.os2g.support.S3Fixture;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.gaul.s3proxy.junit.S3ProxyExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** A real FUSE mount of a real S3 server, read through the kernel with Java's file API. */
@Tag("fuse")
class GatewayMountTest {

    private static final int CHUNK = 64 * 1024;

    @RegisterExtension
    final S3ProxyExtension proxy = S3Fixture.newProxy();

    @TempDir
    Path tmp;

    private S3Fixture s3;
    private Gateway gateway;
    private Path mnt;
    private Path staging;

    private final byte[] small = S3Fixture.bytes(1000, 1);
    private final byte[] crossing = S3Fixture.bytes(CHUNK + 17, 2);
    private final byte[] multi = S3Fixture.bytes(5 * CHUNK + 3, 3);

    @BeforeEach
    void mount() throws Exception {
        s3 = new S3Fixture(proxy).bucket("data");
        s3.put("data", "train/empty.bin", new byte[0])
                .put("data", "train/small.bin", small)
                .put("data", "train/crossing.bin", crossing)
                .put("data", "train/deep/multi.bin", multi)
                .put("data", "odd name ü.txt", small);
        mnt = Files.createDirectory(tmp.resolve("mnt"));
        staging = tmp.resolve("staging");
        gateway = TestMounts.mount(s3, tmp, mnt, "256K", AgentConfig.DEFAULT_DIRECTORY_PREFETCH, 8);
    }

    @AfterEach
    void unmount() {
        if (gateway != null) {
            gateway.close();
        }
    }

    @Test
    void filesReadBackByteForByte() throws Exception {
        assertArrayEquals(new byte[0], Files.readAllBytes(mnt.resolve("train/empty.bin")));
        assertArrayEquals(small, Files.readAllBytes(mnt.resolve("train/small.bin")));
        assertArrayEquals(crossing, Files.readAllBytes(mnt.resolve("train/crossing.bin")));
        assertArrayEquals(multi, Files.readAllBytes(mnt.resolve("train/deep/multi.bin")));
        assertArrayEquals(small, Files.readAllBytes(mnt.resolve("odd name ü.txt")));
        assertEquals(multi.length, Files.size(mnt.resolve("train/deep/multi.bin")));
    }

    @Test
    void randomPreadsReturnTheRightBytes() throws Exception {
        SplittableRandom random = new SplittableRandom(9);
        try (FileChannel ch = FileChannel.open(mnt.resolve("train/deep/multi.bin"))) {
            for (int i = 0; i < 200; i++) {
                int offset = random.nextInt(multi.length);
                int length = 1 + random.nextInt(3 * CHUNK);
                ByteBuffer buffer = ByteBuffer.allocate(length);
                int n = ch.read(buffer, offset);
                int expected = Math.min(length, multi.length - offset);
                assertEquals(expected, n);
                byte[] want = java.util.Arrays.copyOfRange(multi, offset, offset + expected);
                assertArrayEquals(want, java.util.Arrays.copyOf(buffer.array(), n));
            }
        }
    }

    @Test
    void directoriesListWhatTheBucketHolds() throws Exception {
        try (Stream<Path> list = Files.list(mnt.resolve("train"))) {
            assertEquals(List.of("crossing.bin", "deep", "empty.bin", "small.bin"),
                    list.map(p -> p.getFileName().toString()).sorted().toList());
        }
        assertTrue(Files.isDirectory(mnt.resolve("train/deep")));
        assertEquals("r--r--r--", PosixFilePermissions.toString(Files.getPosixFilePermissions(mnt.resolve("train/small.bin"))));
        assertEquals("r-xr-xr-x", PosixFilePermissions.toString(Files.getPosixFilePermissions(mnt.resolve("train"))));
        assertTrue(Files.getFileStore(mnt).getTotalSpace() > 0);
    }

    @Test
    void statsReadAsAFreshJsonSnapshotFromAHiddenDirectory() throws Exception {
        Files.readAllBytes(mnt.resolve("train/small.bin"));
        Map<String, Object> first = io.os2g.metrics.Stats.parse(Files.readString(mnt.resolve(".os2g/stats")));
        assertEquals("in-process", first.get("mode"));
        assertEquals(small.length, ((Number) first.get("bytes_served")).longValue());
        Files.readAllBytes(mnt.resolve("train/crossing.bin"));
        Map<String, Object> second = io.os2g.metrics.Stats.parse(Files.readString(mnt.resolve(".os2g/stats")));
        assertEquals((long) small.length + crossing.length, ((Number) second.get("bytes_served")).longValue(),
                "each open reads a new snapshot, never a cached one");
        assertTrue(((Map<?, ?>) second.get("agent")).get("gets") instanceof Number);
        try (Stream<Path> root = Files.list(mnt)) {
            assertFalse(root.anyMatch(p -> p.getFileName().toString().equals(".os2g")), "hidden from readdir");
        }
        assertErofs(() -> Files.writeString(mnt.resolve(".os2g/stats"), "x"));
        try (Stream<Path> control = Files.list(mnt.resolve(".os2g"))) {
            assertEquals(List.of("extents", "prefetch", "stats", "warm"), control.map(p -> p.getFileName().toString()).sorted().toList());
        }
    }

    @Test
    void pathsWrittenToThePrefetchFileAreStagedBeforeTheyAreRead() throws Exception {
        // relative, absolute under the mount point, and two lines that name no file
        Files.writeString(mnt.resolve(".os2g/prefetch"), "train/deep/multi.bin\n" + mnt.resolve("train/crossing.bin")
                + "\ntrain/nope\ntrain\n");
        Map<String, Object> stats = awaitStats(s -> prefetch(s).get("files_staged").longValue() == 2);
        assertEquals(Map.of("accepted", 2, "rejected", 2), stats.get("hint_lines"));
        long getsBefore = ((Number) ((Map<?, ?>) stats.get("agent")).get("gets")).longValue();

        assertArrayEquals(crossing, Files.readAllBytes(mnt.resolve("train/crossing.bin")));
        assertArrayEquals(multi, Files.readAllBytes(mnt.resolve("train/deep/multi.bin")));
        // close(2) returns before the kernel delivers RELEASE: wait for the pins of the last file to go
        Map<String, Object> after = awaitStats(s -> ((Number) ((Map<?, ?>) ((Map<?, ?>) s.get("agent")).get("staging"))
                .get("pinned_chunks")).longValue() == 0);
        assertEquals(2, prefetch(after).get("staged_before_open").longValue());
        assertEquals(getsBefore, ((Number) ((Map<?, ?>) after.get("agent")).get("gets")).longValue(),
                "the reads were served from what the hints staged");
        assertThrows(java.nio.file.AccessDeniedException.class, () -> Files.readString(mnt.resolve(".os2g/prefetch")));
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Number> prefetch(Map<String, Object> stats) {
        return (Map<String, Number>) ((Map<?, ?>) stats.get("agent")).get("prefetch");
    }

    private Map<String, Object> awaitStats(java.util.function.Predicate<Map<String, Object>> done) throws Exception {
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
        while (true) {
            Map<String, Object> stats = io.os2g.metrics.Stats.parse(Files.readString(mnt.resolve(".os2g/stats")));
            if (done.test(stats)) {
                return stats;
            }
            assertTrue(System.nanoTime() < deadline, "stats never got there: " + stats);
            Thread.sleep(20);
        }
    }

    @Test
    void missingPathsAreEnoentAndWritesAreErofs() {
        assertThrows(NoSuchFileException.class, () -> Files.readAllBytes(mnt.resolve("train/nope")));
        assertErofs(() -> Files.writeString(mnt.resolve("new.txt"), "x"));
        assertErofs(() -> Files.newByteChannel(mnt.resolve("train/small.bin"), StandardOpenOption.WRITE));
        assertErofs(() -> Files.createDirectory(mnt.resolve("dir")));
        assertErofs(() -> Files.delete(mnt.resolve("train/small.bin")));
        assertErofs(() -> Files.move(mnt.resolve("train/small.bin"), mnt.resolve("train/moved.bin")));
    }

    private static void assertErofs(org.junit.jupiter.api.function.Executable write) {
        FileSystemException e = assertThrows(FileSystemException.class, write);
        assertTrue(String.valueOf(e.getReason()).contains("Read-only file system"), "reason: " + e.getReason());
    }

    @Test
    void closingUnmountsAndRemovesTheStagingDir() throws Exception {
        assertTrue(MountTable.isMountPoint(mnt));
        assertTrue(Files.isDirectory(staging));
        gateway.close();
        gateway = null;
        assertFalse(MountTable.isMountPoint(mnt));
        assertFalse(Files.exists(staging));
    }
}
