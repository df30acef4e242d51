package io.os2g.fuse;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The FUSE session against a scripted kernel ({@link FakeKernel}): INIT as each supported kernel sends
 * it, the reply bytes it gets back, lookups and forgets, INTERRUPT, READ sizes of 4 KiB and 64 KiB page
 * kernels, malformed and unknown requests. No root and no mount.
 */
@Tag("unit")
class FuseProtocolTest {

    private static final Duration WAIT = Duration.ofSeconds(5);
    private static final Duration NOTHING = Duration.ofMillis(300);
    private static final long ROOT = 1, FILE = 2, SLOW = 3, OTHER = 4;
    private static final int FILE_SIZE = 3 * 1024 * 1024 + 4321;
    private static final byte[] BYTES = new byte[FILE_SIZE];
    /** Every flag a kernel of the newest minor offers os2g (bits 0-31), and FUSE_PASSTHROUGH in flags2. */
    private static final int ALL_FLAGS = -1 & ~(1 << 31), PASSTHROUGH2 = 1 << 5;

    static {
        new Random(3).nextBytes(BYTES);
    }

    @TempDir
    Path dir;
    private FakeKernel kernel;
    private FuseSession session;
    private final ScriptedFs fs = new ScriptedFs();

    /** /data.bin (FILE, spliced from a file), /slow (waits until interrupted), /other (memory). */
    private final class ScriptedFs implements FuseFileSystem {
        final Map<Long, AtomicInteger> lookups = new ConcurrentHashMap<>();
        final List<Integer> readSizes = new java.util.concurrent.CopyOnWriteArrayList<>();
        final CountDownLatch slowEntered = new CountDownLatch(2);
        int fd = -1;

        @Override
        public Attributes lookup(long parent, String name) {
            long node = switch (name) {
                case "data.bin" -> FILE;
                case "slow" -> SLOW;
                case "other" -> OTHER;
                default -> throw new FuseException(FuseErrno.ENOENT, name);
            };
            lookups.computeIfAbsent(node, n -> new AtomicInteger()).incrementAndGet();
            return getattr(node, -1);
        }

        @Override
        public void forget(long node, long count) {
            lookups.computeIfAbsent(node, n -> new AtomicInteger()).addAndGet((int) -count);
        }

        @Override
        public Attributes getattr(long node, long handle) {
            return new Attributes(node, node == ROOT ? 0 : FILE_SIZE, node == ROOT ? 040755 : 0100444, 1, 0, 0, 0);
        }

        @Override
        public Opened open(long node, int flags) {
            return Opened.handle(node);
        }

        @Override
        public void read(long node, long handle, long offset, int size, ReadReply reply) {
            readSizes.add(size);
            int length = (int) Math.max(0, Math.min(size, FILE_SIZE - offset));
            if (node == SLOW) {
                java.util.concurrent.CompletableFuture<Void> never = new java.util.concurrent.CompletableFuture<>();
                reply.whenInterrupted(() -> never.completeExceptionally(new FuseException(FuseErrno.EINTR, "interrupted")));
                slowEntered.countDown();
                try {
                    never.get(30, TimeUnit.SECONDS);
                } catch (java.util.concurrent.ExecutionException e) {
                    throw (FuseException) e.getCause();
                } catch (Exception e) {
                    throw new FuseException(FuseErrno.EIO, e.toString());
                }
            }
            reply.begin(length);
            if (node == FILE && fd >= 0) {
                reply.splice(fd, offset, length);
            } else {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment m = arena.allocate(Math.max(1, length));
                    MemorySegment.copy(BYTES, (int) offset, m, ValueLayout.JAVA_BYTE, 0, length);
                    reply.copy(m.asSlice(0, length));
                }
            }
        }

        @Override
        public void release(long node, long handle) {
        }

        @Override
        public List<Entry> list(long directory) {
            return List.of();
        }
    }

    private void start(int threads, int pageSize, int largestRequest) throws Exception {
        Path data = dir.resolve("data.bin");
        Files.write(data, BYTES);
        fs.fd = Native.open(data.toString(), 0);
        kernel = new FakeKernel();
        session = new FuseSession(kernel.device(), fs, threads, FuseSession.Timeouts.forever(), pageSize, largestRequest);
        session.start();
    }

    @AfterEach
    void stop() throws Exception {
        if (kernel != null) {
            kernel.close();
            assertTrue(session.join(WAIT), "the session ends when its peer hangs up");
            session.close();
        }
        if (fs.fd >= 0) {
            Native.close(fs.fd);
        }
    }

    private FakeKernel.Reply init(int minor, int flags, int flags2) throws Exception {
        kernel.send(FuseSession.INIT, 2, 0, FakeKernel.init(7, minor, 128 * 1024, flags, flags2));
        return kernel.receive(WAIT);
    }

    /** The INIT flags a kernel of {@code minor} knows, all offered (as the kernel does). */
    private static int offered(int minor) {
        int flags = Negotiation.ASYNC_READ | Negotiation.ATOMIC_O_TRUNC | Negotiation.BIG_WRITES;
        flags |= minor >= 20 ? Negotiation.AUTO_INVAL_DATA : 0;
        flags |= minor >= 21 ? Negotiation.DO_READDIRPLUS | Negotiation.READDIRPLUS_AUTO : 0;
        flags |= minor >= 25 ? Negotiation.PARALLEL_DIROPS : 0;
        flags |= minor >= 28 ? Negotiation.MAX_PAGES : 0;
        flags |= minor >= 36 ? Negotiation.INIT_EXT : 0;
        return flags | (1 << 16) /* POSIX_ACL-like bits os2g does not ask for */ | (1 << 4);
    }

    @ParameterizedTest(name = "kernel 7.{0} ({1})")
    @CsvSource({
            "22, RHEL 7 (3.10), 24",
            "27, RHEL 8 base (4.18), 64",
            "31, Ubuntu 20.04 (5.4) and later RHEL 8, 64",
            "33, RHEL 9 (5.14), 64",
            "34, Ubuntu 22.04 (5.15), 64",
            "38, Ubuntu 24.04 (6.8), 64",
            "41, Linux 6.12, 64",
            "45, a kernel newer than os2g, 64"})
    void initIsAnsweredWithTheFeaturesTheKernelsMinorHas(int minor, String kernelName, int replyLength) throws Exception {
        start(2, 4096, 1 << 20);
        int flags = offered(minor);
        FakeKernel.Reply reply = init(minor, flags, minor >= 40 ? PASSTHROUGH2 : 0);
        assertNotNull(reply, "INIT answered");
        assertEquals(0, reply.error());
        assertEquals(2, reply.unique());
        assertEquals(replyLength, reply.body().length, "fuse_init_out of that minor's size");
        ByteBuffer out = reply.buffer();
        int agreed = Math.min(minor, Negotiation.PROTOCOL_MINOR);
        assertEquals(7, out.getInt(0));
        assertEquals(agreed, out.getInt(4));
        int answered = out.getInt(12);
        assertEquals(0, answered & ~flags, "nothing the kernel did not offer");
        assertEquals(0, answered & ((1 << 16) | (1 << 4)), "nothing os2g does not use");
        assertEquals(minor >= 28, (answered & Negotiation.MAX_PAGES) != 0, "max_pages from 7.28");
        assertEquals(minor >= 25, (answered & Negotiation.PARALLEL_DIROPS) != 0, "parallel dirops from 7.25");
        assertTrue((answered & Negotiation.DO_READDIRPLUS) != 0 && (answered & Negotiation.AUTO_INVAL_DATA) != 0);
        assertEquals(1 << 20, out.getInt(20), "max_write: what a reply pipe holds (as the session was told)");
        if (replyLength == 64) {
            assertEquals(1, out.getInt(24), "time_gran");
            assertEquals(minor >= 28 ? 256 : 0, Short.toUnsignedInt(out.getShort(28)), "max_pages of 4 KiB");
            assertEquals(minor >= 40 ? PASSTHROUGH2 : 0, out.getInt(32), "passthrough from 7.40, where offered");
        }
        Negotiation negotiation = session.awaitInit();
        assertEquals(agreed, negotiation.minor());
        assertEquals(minor >= 28 ? 1 << 20 : 32 * 4096, negotiation.largestRead());
        assertTrue(negotiation.describe().startsWith("FUSE 7." + agreed), negotiation.describe());

        // and the mount then serves: a lookup and a read
        kernel.send(FuseSession.LOOKUP, 4, ROOT, FakeKernel.name("data.bin"));
        FakeKernel.Reply entry = kernel.receive(WAIT);
        assertEquals(0, entry.error());
        assertEquals(FILE, entry.buffer().getLong(0));
        kernel.send(FuseSession.READ, 6, FILE, FakeKernel.read(FILE, 4096, 128 * 1024));
        assertBytes(kernel.receive(WAIT), 6, 4096, 128 * 1024);
    }

    @Test
    void aMountRemovedBeforeItsInitEndsTheWaitForIt() throws Exception {
        start(2, 4096, 1 << 20);
        kernel.close(); // the mount was taken away before the kernel's INIT was read (its maker gave up on it)
        long started = System.nanoTime();
        IllegalStateException e = assertThrows(IllegalStateException.class, session::awaitInit);
        assertTrue(e.getMessage().contains("removed before"), e.getMessage());
        assertTrue(System.nanoTime() - started < java.util.concurrent.TimeUnit.SECONDS.toNanos(20), "not the INIT timeout");
        assertTrue(session.join(WAIT));
        session.close();
        kernel = null;
    }

    @Test
    void aKernelOlderThanTheOldestSupportedIsRefusedAtInitWithOneLine() throws Exception {
        start(2, 4096, 1 << 20);
        FakeKernel.Reply reply = init(21, offered(21), 0);
        assertEquals(-FuseErrno.EPROTO, reply.error());
        assertEquals(0, reply.body().length);
        Negotiation.Refused refused = assertThrows(Negotiation.Refused.class, session::awaitInit);
        assertEquals("the kernel speaks FUSE protocol 7.21; os2g needs 7.22 or later (Linux 3.10, RHEL 7)", refused.getMessage());

        kernel.send(FuseSession.INIT, 4, 0, FakeKernel.init(6, 9, 0, 0, 0));
        assertEquals(-FuseErrno.EPROTO, kernel.receive(WAIT).error(), "a major below 7 too");
    }

    @Test
    void aNewerMajorIsToldSevenAndTheKernelsSecondInitIsNegotiated() throws Exception {
        start(2, 4096, 1 << 20);
        kernel.send(FuseSession.INIT, 2, 0, FakeKernel.init(8, 0, 0, ALL_FLAGS, 0));
        FakeKernel.Reply first = kernel.receive(WAIT);
        assertEquals(0, first.error());
        assertEquals(7, first.buffer().getInt(0));
        assertEquals(Negotiation.PROTOCOL_MINOR, first.buffer().getInt(4));
        assertEquals(0, first.buffer().getInt(12), "no features for a protocol not spoken");

        FakeKernel.Reply second = init(41, offered(41), PASSTHROUGH2);
        assertEquals(0, second.error());
        assertEquals(41, session.awaitInit().minor());
    }

    @Test
    void sixtyFourKibPagesAskForFewerPagesAndReadsOfTheirSizeAreAnsweredWhole() throws Exception {
        int page = 64 * 1024;
        int largest = PipedReply.largestRead(page); // 1 MiB, or 512 KiB where pipes may not grow past 1 MiB
        start(2, page, largest);
        FakeKernel.Reply reply = init(41, offered(41), 0);
        assertEquals(largest / page, Short.toUnsignedInt(reply.buffer().getShort(28)),
                "16 (or 8) pages of 64 KiB, not 256 of them (16 MiB)");
        Negotiation negotiation = session.awaitInit();
        assertEquals(largest, negotiation.largestRead());
        assertTrue(negotiation.describe().contains("64 KiB pages"), negotiation.describe());

        // max_pages of them page-aligned and from an odd offset, one page, then the file's tail
        kernel.send(FuseSession.READ, 4, FILE, FakeKernel.read(FILE, 0, largest));
        assertBytes(kernel.receive(WAIT), 4, 0, largest);
        kernel.send(FuseSession.READ, 6, FILE, FakeKernel.read(FILE, 12345, largest));
        assertBytes(kernel.receive(WAIT), 6, 12345, largest);
        kernel.send(FuseSession.READ, 8, FILE, FakeKernel.read(FILE, 777, page));
        assertBytes(kernel.receive(WAIT), 8, 777, page);
        kernel.send(FuseSession.READ, 10, FILE, FakeKernel.read(FILE, 3 * 1024 * 1024, largest));
        assertBytes(kernel.receive(WAIT), 10, 3 * 1024 * 1024, 4321);
    }

    @Test
    void aReadLargerThanAReplyPipeIsAnsweredWholeFromMemory() throws Exception {
        int largest = 64 * 1024; // a kernel without max_pages sends 32 pages whatever the pipe holds
        start(2, 4096, largest);
        init(27, offered(27), 0);
        assertEquals(32 * 4096, session.awaitInit().largestRead());

        kernel.send(FuseSession.READ, 4, FILE, FakeKernel.read(FILE, 777, 160 * 1024));
        assertBytes(kernel.receive(WAIT), 4, 777, 160 * 1024);
        assertEquals(List.of(65536, 65536, 32768), fs.readSizes, "asked of the file system a pipe's worth at a time");

        kernel.send(FuseSession.READ, 6, OTHER, FakeKernel.read(OTHER, FILE_SIZE - 1000, 128 * 1024));
        assertBytes(kernel.receive(WAIT), 6, FILE_SIZE - 1000, 1000);
    }

    @Test
    void anInterruptedReadIsAnsweredEintrPromptlyAndTheSessionGoesOn() throws Exception {
        start(1, 4096, 1 << 20); // one thread: the read waits in it, so another must be started to read the INTERRUPT
        init(41, offered(41), 0);
        kernel.send(FuseSession.READ, 10, SLOW, FakeKernel.read(SLOW, 0, 4096));
        kernel.send(FuseSession.READ, 12, SLOW, FakeKernel.read(SLOW, 0, 4096));
        assertTrue(fs.slowEntered.await(5, TimeUnit.SECONDS), "both reads wait in the file system");

        long sent = System.nanoTime();
        kernel.send(FuseSession.INTERRUPT, 14 | FakeKernel.INT_REQ_BIT, 0, FakeKernel.longs(10));
        FakeKernel.Reply reply = kernel.receive(WAIT);
        assertEquals(10, reply.unique(), "the READ is answered, the INTERRUPT is not");
        assertEquals(-FuseErrno.EINTR, reply.error());
        assertTrue(System.nanoTime() - sent < TimeUnit.SECONDS.toNanos(2), "promptly");

        kernel.send(FuseSession.GETATTR, 16, FILE, new byte[16]);
        FakeKernel.Reply attributes = kernel.receive(WAIT);
        assertEquals(16, attributes.unique(), "still served while a read waits");
        assertEquals(FILE_SIZE, attributes.buffer().getLong(16 + 8));

        kernel.send(FuseSession.INTERRUPT, 18 | FakeKernel.INT_REQ_BIT, 0, FakeKernel.longs(12));
        assertEquals(-FuseErrno.EINTR, kernel.receive(WAIT).error());
    }

    @Test
    void anInterruptForARequestNotSeenIsSentBackWithEagain() throws Exception {
        start(2, 4096, 1 << 20);
        init(41, offered(41), 0);
        kernel.send(FuseSession.INTERRUPT, 21, 0, FakeKernel.longs(20));
        FakeKernel.Reply reply = kernel.receive(WAIT);
        assertEquals(21, reply.unique());
        assertEquals(-FuseErrno.EAGAIN, reply.error(), "the kernel queues it again");
    }

    @Test
    void lookupsAndForgetsBalanceAndForgetsAreNotAnswered() throws Exception {
        start(2, 4096, 1 << 20);
        init(41, offered(41), 0);
        for (int i = 0; i < 3; i++) {
            kernel.send(FuseSession.LOOKUP, 4 + 2 * i, ROOT, FakeKernel.name("data.bin"));
            assertEquals(0, kernel.receive(WAIT).error());
        }
        kernel.send(FuseSession.LOOKUP, 10, ROOT, FakeKernel.name("other"));
        assertEquals(0, kernel.receive(WAIT).error());
        kernel.send(FuseSession.LOOKUP, 12, ROOT, FakeKernel.name("missing"));
        FakeKernel.Reply negative = kernel.receive(WAIT);
        assertEquals(0, negative.error(), "a negative entry, cached for the negative timeout");
        assertEquals(0, negative.buffer().getLong(0), "node 0: not there");
        assertEquals(3, fs.lookups.get(FILE).get());

        kernel.send(FuseSession.FORGET, 14, FILE, FakeKernel.longs(1));
        kernel.send(FuseSession.BATCH_FORGET, 16, 0, FakeKernel.longs(2L, FILE, 2, OTHER, 1)); // count, dummy; (node, nlookup) pairs
        assertNull(kernel.receive(NOTHING), "FORGET and BATCH_FORGET have no reply");
        assertEquals(0, fs.lookups.get(FILE).get());
        assertEquals(0, fs.lookups.get(OTHER).get());
    }

    @Test
    void unknownOpcodesAreEnosysChangesErofsAndDestroyIsAnswered() throws Exception {
        start(2, 4096, 1 << 20);
        init(41, offered(41), 0);
        kernel.send(999, 4, ROOT, new byte[0]);
        assertEquals(-FuseErrno.ENOSYS, kernel.receive(WAIT).error());
        kernel.send(25 /* FLUSH */, 6, FILE, new byte[24]);
        assertEquals(-FuseErrno.ENOSYS, kernel.receive(WAIT).error(), "the kernel stops sending FLUSH");
        kernel.send(FuseSession.MKDIR, 8, ROOT, new byte[16]);
        assertEquals(-FuseErrno.EROFS, kernel.receive(WAIT).error());
        kernel.send(FuseSession.DESTROY, 10, 0, new byte[0]);
        FakeKernel.Reply destroy = kernel.receive(WAIT);
        assertEquals(10, destroy.unique());
        assertEquals(0, destroy.error());
        assertEquals(0, destroy.body().length);
    }

    @Test
    void malformedRequestsAreAnsweredEioOrDroppedAndServingGoesOn() throws Exception {
        start(2, 4096, 1 << 20);
        init(41, offered(41), 0);
        kernel.sendRaw(new byte[7]); // shorter than any header: nothing to answer
        ByteBuffer lying = ByteBuffer.allocate(48).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        lying.putInt(4096).putInt(FuseSession.LOOKUP).putLong(30).putLong(ROOT);
        kernel.sendRaw(lying.array()); // a length that is not what came
        FakeKernel.Reply reply = kernel.receive(WAIT);
        assertEquals(30, reply.unique());
        assertEquals(-FuseErrno.EIO, reply.error());

        kernel.send(FuseSession.LOOKUP, 32, ROOT, "no-terminating-nul".getBytes()); // a name without its NUL
        assertEquals(-FuseErrno.EIO, kernel.receive(WAIT).error());
        kernel.send(FuseSession.READ, 34, FILE, new byte[8]); // fuse_read_in cut short
        assertEquals(-FuseErrno.EIO, kernel.receive(WAIT).error());

        kernel.send(FuseSession.LOOKUP, 36, ROOT, FakeKernel.name("data.bin"));
        assertEquals(0, kernel.receive(WAIT).error(), "the session still serves");
    }

    @Test
    void largestReadFollowsThePagesAPipeHolds() {
        assertEquals(1 << 20, PipedReply.largestRead(2 << 20, 4096));
        assertEquals(512 << 10, PipedReply.largestRead(1 << 20, 4096));
        assertEquals(1 << 20, PipedReply.largestRead(2 << 20, 64 << 10));
        assertEquals(512 << 10, PipedReply.largestRead(1 << 20, 64 << 10), "16 slots: 8 pages, the header, an odd start");
        assertEquals(64 << 10, PipedReply.largestRead(64 << 10, 64 << 10), "never less than a page");
        assertFalse(Native.pageSize() <= 0);
    }

    @Test
    void theMountAsksForReadsNoLargerThanAPipeHolds() {
        assertEquals("allow_other,max_read=524288", FuseMounter.withMaxRead("allow_other", 512 << 10));
        assertEquals("max_read=131072", FuseMounter.withMaxRead("max_read=131072", 512 << 10), "a smaller one given is kept");
        assertEquals("max_read=524288", FuseMounter.withMaxRead("max_read=4194304", 512 << 10));
        assertEquals("max_read=524288", FuseMounter.withMaxRead("", 512 << 10));
    }

    @Test
    void socketStructsAreLaidOutAsTheLp64CAbiHasThem() {
        // x86-64 and arm64 (both LP64, glibc): msghdr 56 bytes, a cmsghdr with one descriptor CMSG_SPACE 24, CMSG_LEN 20
        java.lang.foreign.StructLayout[] structs = Native.socketStructs();
        assertEquals(16, structs[0].byteSize(), "iovec");
        assertEquals(56, structs[1].byteSize(), "msghdr");
        assertEquals(40, structs[1].byteOffset(java.lang.foreign.MemoryLayout.PathElement.groupElement("msg_controllen")));
        assertEquals(24, structs[2].byteSize(), "CMSG_SPACE(sizeof(int))");
        assertEquals(20, Native.CMSG_FD_LEN, "CMSG_LEN(sizeof(int))");
    }

    private static void assertBytes(FakeKernel.Reply reply, long unique, int offset, int length) {
        assertNotNull(reply, "a reply");
        assertEquals(unique, reply.unique());
        assertEquals(0, reply.error());
        assertArrayEquals(java.util.Arrays.copyOfRange(BYTES, offset, offset + length), reply.body());
    }
}
