package io.os2g.fuse;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A real kernel mount served by {@link FuseSession}: what a reader of the mount sees. */
@Tag("fuse")
class FuseSessionMountTest {

    private static final long ROOT = 1, FILE = 2, DIR = 3, MANY = 4;
    /** Entries of /many: more than a page of READDIR(PLUS) replies can carry many times over. */
    private static final int MANY_ENTRIES = 3000;
    private static final byte[] BYTES = new byte[3 * 1024 * 1024 + 123];

    static {
        new Random(7).nextBytes(BYTES);
    }

    @TempDir
    Path dir;
    private Path mnt;
    private FuseSession session;

    /** "/data.bin" (3 MiB + 123 bytes) and an empty "/sub". */
    /** How TinyFs answers reads of data.bin. */
    private enum Mode { COPY, SPLICE, SPLICE_THEN_OVERWRITE, PASSTHROUGH, PASSTHROUGH_CHANGED, DELEGATE, DELEGATE_FAIL }

    private static final class TinyFs implements FuseFileSystem {
        private final Mode mode;
        /** A file holding BYTES (SPLICE, PASSTHROUGH, DELEGATE). */
        private final int fd;
        /** Replies through a lent descriptor (DELEGATE), as another process would answer. */
        LentDeviceReplies replies;
        private final Path source;
        final java.util.concurrent.atomic.AtomicInteger reads = new java.util.concurrent.atomic.AtomicInteger();
        final java.util.concurrent.atomic.AtomicInteger reusedBackings = new java.util.concurrent.atomic.AtomicInteger();
        final java.util.concurrent.atomic.AtomicInteger releases = new java.util.concurrent.atomic.AtomicInteger();
        private final java.util.concurrent.ExecutorService other = java.util.concurrent.Executors.newSingleThreadExecutor();

        TinyFs(Mode mode, int fd, Path source) {
            this.mode = mode;
            this.fd = fd;
            this.source = source;
        }

        TinyFs() {
            this(Mode.COPY, -1, null);
        }

        @Override
        public Attributes lookup(long parent, String name) {
            if (parent == ROOT && name.equals("data.bin")) {
                return getattr(FILE, -1);
            }
            if (parent == ROOT && name.equals("sub")) {
                return getattr(DIR, -1);
            }
            if (parent == ROOT && name.equals("many")) {
                return getattr(MANY, -1);
            }
            throw new NotFound();
        }

        @Override
        public byte[] getxattr(long node, String name) {
            if (node == FILE && name.equals("user.os2g.test")) {
                return "hello".getBytes();
            }
            throw new NoData();
        }

        @Override
        public List<String> listxattr(long node) {
            return node == FILE ? List.of("user.os2g.test") : List.of();
        }

        @Override
        public Attributes getattr(long node, long handle) {
            return node == FILE ? new Attributes(FILE, BYTES.length, 0100444, 1, 0, 0, 1_700_000_000_123L)
                    : new Attributes(node, 4096, 040555, 2, 0, 0, 1_700_000_000_000L);
        }

        @Override
        public Opened open(long node, int flags) {
            if (mode != Mode.PASSTHROUGH && mode != Mode.PASSTHROUGH_CHANGED) {
                return Opened.handle(42);
            }
            return Opened.backedBy(42, new Backing() {
                @Override
                public Path path() {
                    return source;
                }

                @Override
                public BackingFile verify() {
                    try {
                        var now = Files.readAttributes(source, "unix:ino,size,ctime,lastModifiedTime");
                        long changed = ((java.nio.file.attribute.FileTime) now.get("ctime")).to(java.util.concurrent.TimeUnit.NANOSECONDS);
                        return new BackingFile(source, (Long) now.get("ino"), (Long) now.get("size"),
                                mode == Mode.PASSTHROUGH ? changed : changed - 1, // as verified a moment before, or changed since
                                ((java.nio.file.attribute.FileTime) now.get("lastModifiedTime")).toMillis());
                    } catch (java.io.IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }

                @Override
                public void reused(BackingFile kept) {
                    reusedBackings.incrementAndGet();
                }
            });
        }

        @Override
        public void read(long node, long handle, long offset, int size, ReadReply reply) {
            reads.incrementAndGet();
            int from = (int) Math.min(offset, BYTES.length);
            int to = (int) Math.min(BYTES.length, offset + size);
            MemorySegment data = java.lang.foreign.Arena.ofAuto().allocate(Math.max(to - from, 1));
            MemorySegment.copy(BYTES, from, data, java.lang.foreign.ValueLayout.JAVA_BYTE, 0, to - from);
            switch (mode) {
                case SPLICE -> {
                    reply.begin(to - from);
                    reply.splice(fd, from, to - from);
                }
                case SPLICE_THEN_OVERWRITE -> {
                    // as a staging region reuses pages in place: the spliced pages change once the reply is done
                    reply.begin(to - from);
                    reply.splice(fd, from, to - from);
                    reply.whenDone(() -> overwrite(from, to - from));
                }
                case DELEGATE -> {
                    ForwardedRead forwarded = reply.forward();
                    // alternately copied from memory and spliced from the file, as the agent may do
                    if (reads.get() % 2 == 0) {
                        other.submit(() -> replies.read(forwarded.unique(), data.asSlice(0, to - from)));
                    } else {
                        other.submit(() -> replies.read(forwarded.unique(), r -> {
                            r.begin(to - from);
                            r.splice(fd, from, to - from);
                        }));
                    }
                }
                case DELEGATE_FAIL -> {
                    ForwardedRead forwarded = reply.forward();
                    other.submit(() -> forwarded.fail(FuseErrno.EIO));
                }
                default -> {
                    reply.begin(to - from);
                    reply.copy(data.asSlice(0, to - from));
                }
            }
        }

        @Override
        public void release(long node, long handle) {
            releases.incrementAndGet();
        }

        private void overwrite(long from, int length) {
            try (var file = java.nio.channels.FileChannel.open(source, java.nio.file.StandardOpenOption.WRITE)) {
                file.write(java.nio.ByteBuffer.allocate(length), from);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }

        @Override
        public List<Entry> list(long directory) {
            List<Entry> entries = new java.util.ArrayList<>(List.of(new Entry(".", null), new Entry("..", null)));
            if (directory == ROOT) {
                entries.add(new Entry("data.bin", getattr(FILE, -1)));
                entries.add(new Entry("sub", getattr(DIR, -1)));
                entries.add(new Entry("many", getattr(MANY, -1)));
            }
            if (directory == MANY) {
                for (int i = 0; i < MANY_ENTRIES; i++) {
                    entries.add(new Entry(String.format("f%04d", i), new Attributes(100 + i, 0, 0100444, 1, 0, 0, 0)));
                }
            }
            return entries;
        }
    }

    private static final class NotFound extends FuseException {
        NotFound() {
            super(FuseErrno.ENOENT, "no such entry");
        }
    }

    @BeforeEach
    void mount() throws Exception {
        assumeTrue(Files.isWritable(Path.of("/dev/fuse")) && "root".equals(System.getProperty("user.name")),
                "needs root and /dev/fuse");
        mnt = Files.createDirectory(dir.resolve("mnt"));
        int fd = FuseMounter.mount(mnt, "tiny", "os2gtest", "default_permissions", 0, 0);
        session = new FuseSession(fd, new TinyFs(), 2, FuseSession.Timeouts.forever());
        session.start();
    }

    @AfterEach
    void unmount() throws Exception {
        if (session != null) {
            FuseMounter.unmount(mnt, 0);
            session.join();
            session.close();
        }
    }

    @Test
    void readsSplicedFromAFileReturnItsBytes() throws Exception {
        assertTrue(readsThrough(Mode.SPLICE) > 0);
    }

    @Test
    void aSplicedReplyIsSentBeforeItsPagesAreLetGo() throws Exception {
        assertTrue(readsThrough(Mode.SPLICE_THEN_OVERWRITE) > 0);
    }

    @Test
    void readsAnsweredFromAnotherThreadThroughTheSameDescriptorReturnTheBytes() throws Exception {
        assertTrue(readsThrough(Mode.DELEGATE) > 0);
    }

    @Test
    void aForwardedReadFailedByItsSessionGivesTheReaderTheErrno() throws Exception {
        assertTrue(readsThrough(Mode.DELEGATE_FAIL) > 0);
    }

    @Test
    void onlyAFuseDeviceIsTakenFromAHandoff() throws Exception {
        try (DeviceHandoff handoff = DeviceHandoff.listen(dir.resolve("not-fuse.sock"))) {
            int file = Native.open("/proc/self/status", 0);
            try {
                DeviceHandoff.send(file, handoff.path());
            } finally {
                Native.close(file);
            }
            assertEquals(-1, handoff.take());
        }
        assertTrue(Files.notExists(dir.resolve("not-fuse.sock")), "the socket file goes with the handoff");
    }

    @Test
    void aPassthroughOpenIsReadByTheKernelWithoutAnyRead() throws Exception {
        assertEquals(0, readsThrough(Mode.PASSTHROUGH), "two opens, the second taking the backing file the first left");
    }

    @Test
    void aBackingFileChangedSinceItWasVerifiedIsNotGivenToTheKernel() throws Exception {
        assertTrue(readsThrough(Mode.PASSTHROUGH_CHANGED) > 0, "read through the session");
    }

    /** Mounts TinyFs in {@code mode}, reads data.bin whole and in part, and returns how many READs it served. */
    private int readsThrough(Mode mode) throws Exception {
        Path source = Files.write(Files.createTempFile(Path.of("/dev/shm"), "os2g-fuse-test", ".bin"), BYTES);
        Path other = Files.createDirectory(dir.resolve(mode.name()));
        int backing = Native.open(source.toString(), 0);
        int fd = FuseMounter.mount(other, "tiny", "os2gtest", "", 0, 0);
        TinyFs fs = new TinyFs(mode, backing, source);
        if (mode == Mode.DELEGATE) {
            try (DeviceHandoff handoff = DeviceHandoff.listen(dir.resolve("handoff.sock"))) {
                assertEquals(-1, handoff.take(), "nothing sent yet");
                DeviceHandoff.send(fd, handoff.path());
                fs.replies = new LentDeviceReplies(handoff.take());
            }
        }
        FuseSession session = new FuseSession(fd, fs, 2, FuseSession.Timeouts.forever());
        session.start();
        try {
            if (mode == Mode.DELEGATE_FAIL) {
                var failed = assertThrows(java.io.IOException.class, () -> Files.readAllBytes(other.resolve("data.bin")));
                assertTrue(String.valueOf(failed.getMessage()).contains("Input/output error"), failed.toString());
                return fs.reads.get();
            }
            assertArrayEquals(BYTES, Files.readAllBytes(other.resolve("data.bin")));
            if (mode == Mode.PASSTHROUGH) {
                // the kernel sends RELEASE after close returns: an open before it joins the open file, kept or not
                long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
                while (fs.releases.get() == 0 && System.nanoTime() < deadline) {
                    Thread.sleep(1);
                }
            }
            if (mode == Mode.SPLICE_THEN_OVERWRITE) {
                // the last reply's pages are let go just after the reader has its bytes, by the session's thread
                long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
                while (!java.util.Arrays.equals(new byte[BYTES.length], Files.readAllBytes(source)) && System.nanoTime() < deadline) {
                    Thread.sleep(10);
                }
                assertArrayEquals(new byte[BYTES.length], Files.readAllBytes(source), "every spliced page overwritten once its reply was done");
                return fs.reads.get();
            }
            try (var channel = java.nio.channels.FileChannel.open(other.resolve("data.bin"))) {
                java.nio.ByteBuffer middle = java.nio.ByteBuffer.allocate(777_777);
                assertEquals(777_777, channel.read(middle, 12_345));
                assertArrayEquals(java.util.Arrays.copyOfRange(BYTES, 12_345, 12_345 + 777_777), middle.array());
            }
            if (mode == Mode.PASSTHROUGH) {
                assertEquals(1, fs.reusedBackings.get(), "the second open took the backing file the first left, unchanged");
            }
            return fs.reads.get();
        } finally {
            FuseMounter.unmount(other, 0);
            session.join();
            session.close();
            if (fs.replies != null) {
                fs.replies.close();
            }
            Native.close(backing);
            Files.delete(source);
        }
    }

    @Test
    void fusermount3MountsForAUserWhoIsNotRootAndUnmounts() throws Exception {
        Path other = Files.createDirectory(dir.resolve("other"));
        int fd = FuseMounter.mountThroughFusermount(other, "tiny", "os2gtest", "default_permissions");
        FuseSession second = new FuseSession(fd, new TinyFs(), 1, FuseSession.Timeouts.forever());
        second.start();
        try {
            assertArrayEquals(BYTES, Files.readAllBytes(other.resolve("data.bin")));
        } finally {
            FuseMounter.unmount(other, 1000);
            second.join();
            second.close();
        }
    }

    @Test
    void aFileReadsBackItsBytesWholeAndAtAnOffset() throws Exception {
        assertArrayEquals(BYTES, Files.readAllBytes(mnt.resolve("data.bin")));
        try (var channel = java.nio.channels.FileChannel.open(mnt.resolve("data.bin"))) {
            java.nio.ByteBuffer tail = java.nio.ByteBuffer.allocate(1000);
            int n = channel.read(tail, BYTES.length - 500);
            assertEquals(500, n);
            assertArrayEquals(java.util.Arrays.copyOfRange(BYTES, BYTES.length - 500, BYTES.length),
                    java.util.Arrays.copyOf(tail.array(), 500));
        }
    }

    @Test
    void statListAndMissingNamesAreWhatTheFileSystemSays() throws Exception {
        assertEquals(BYTES.length, Files.size(mnt.resolve("data.bin")));
        assertEquals(1_700_000_000_123L, Files.getLastModifiedTime(mnt.resolve("data.bin")).toMillis());
        try (Stream<Path> list = Files.list(mnt)) {
            assertEquals(List.of("data.bin", "many", "sub"), list.map(p -> p.getFileName().toString()).sorted().toList());
        }
        try (Stream<Path> list = Files.list(mnt.resolve("sub"))) {
            assertEquals(0, list.count());
        }
        List<String> expected = java.util.stream.IntStream.range(0, MANY_ENTRIES).mapToObj(i -> String.format("f%04d", i)).toList();
        for (int pass = 0; pass < 2; pass++) { // listed afresh at each opendir, paged through the kept listing
            try (Stream<Path> list = Files.list(mnt.resolve("many"))) {
                assertEquals(expected, list.map(p -> p.getFileName().toString()).sorted().toList());
            }
        }
        assertThrows(NoSuchFileException.class, () -> Files.size(mnt.resolve("missing")));
        assertThrows(NoSuchFileException.class, () -> Files.size(mnt.resolve("missing"))); // the cached "not there"
    }

    @Test
    void changesAreRefusedWithEROFS() {
        var e = assertThrows(java.nio.file.FileSystemException.class, () -> Files.createDirectory(mnt.resolve("new")));
        assertTrue(e.getMessage().contains("Read-only file system"), e.getMessage());
        var w = assertThrows(java.io.IOException.class, () -> Files.write(mnt.resolve("data.bin"), new byte[] {1}));
        assertTrue(w.getMessage().contains("Read-only file system"), w.getMessage());
    }

    @Test
    void extendedAttributesAndStatfsAreWhatTheFileSystemSays() throws Exception {
        var view = Files.getFileAttributeView(mnt.resolve("data.bin"), java.nio.file.attribute.UserDefinedFileAttributeView.class);
        assertEquals(List.of("os2g.test"), view.list());
        java.nio.ByteBuffer value = java.nio.ByteBuffer.allocate(view.size("os2g.test"));
        view.read("os2g.test", value);
        assertEquals("hello", new String(value.array()));
        assertEquals(4096, Files.getFileStore(mnt).getBlockSize());
    }
}
