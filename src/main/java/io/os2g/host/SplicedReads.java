package io.os2g.host;

import io.os2g.Errno;
import java.lang.foreign.AddressLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ConcurrentHashMap;
import org.cryptomator.jfuse.api.Fuse;
import org.cryptomator.jfuse.linux.amd64.extr.fuse3.fuse_file_info;
import org.cryptomator.jfuse.linux.amd64.extr.fuse3.fuse_operations;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * libfuse's {@code read_buf} operation for a mount, which jfuse does not offer: a read of staged bytes
 * answers with a pipe that holds references to the staging pages, and libfuse splices it on to
 * /dev/fuse, so the bytes are copied once (into the kernel's page cache) instead of twice (out of the
 * segment into a buffer, then out of the buffer). Every other read (a control file, a region that keeps
 * its pages in place, a read too large for the pipe) answers with a malloc'd buffer that libfuse frees.
 *
 * <p>The pins are let go when the callback returns, before libfuse has consumed the pipe: safe because
 * such a region never overwrites a page it reuses (see {@code StagingRegion}): the pipe keeps the bytes
 * it was given. libfuse takes everything from the pipe in every path it may go (the splice, or a copy
 * when splicing is not possible), so a pipe is empty when its thread's next read starts; one that is
 * not is replaced.
 */
final class SplicedReads implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(SplicedReads.class);

    /** libfuse 3: fuse_buf_flags. */
    private static final int FUSE_BUF_IS_FD = 1 << 1;
    /** libfuse sends a reply of less than two pages by copy whatever it is given. */
    private static final long MIN_SPLICED = 2 * 4096;
    /** Room in a pipe beyond a read's bytes: libfuse's own pipe also holds the reply's header. */
    private static final int PIPE_SLACK = 4 * 4096;
    private static final int LARGEST_READ = 1 << 20;

    /** libfuse 3's struct fuse_bufvec with its one struct fuse_buf. */
    private static final StructLayout BUFVEC = MemoryLayout.structLayout(
            ValueLayout.JAVA_LONG.withName("count"),
            ValueLayout.JAVA_LONG.withName("idx"),
            ValueLayout.JAVA_LONG.withName("off"),
            ValueLayout.JAVA_LONG.withName("size"),
            ValueLayout.JAVA_INT.withName("flags"),
            MemoryLayout.paddingLayout(4),
            ValueLayout.ADDRESS.withName("mem"),
            ValueLayout.JAVA_INT.withName("fd"),
            MemoryLayout.paddingLayout(4),
            ValueLayout.JAVA_LONG.withName("pos"));
    private static final long COUNT = offset("count");
    private static final long SIZE = offset("size");
    private static final long FLAGS = offset("flags");
    private static final long MEM = offset("mem");
    private static final long FD = offset("fd");

    /*
     * Pointers come typed with what they point to (sized segments), so the upcall needs no
     * reinterpret(): a restricted method whose caller check walks the stack on every call.
     */
    private static final AddressLayout BYTES = ValueLayout.ADDRESS.withTargetLayout(
            MemoryLayout.sequenceLayout(Long.MAX_VALUE, ValueLayout.JAVA_BYTE));
    private static final AddressLayout VECTOR = ValueLayout.ADDRESS.withTargetLayout(BUFVEC);
    private static final AddressLayout FILE_INFO = ValueLayout.ADDRESS.withTargetLayout(
            MemoryLayout.sequenceLayout(fuse_file_info.fh$offset() + Long.BYTES, ValueLayout.JAVA_BYTE));

    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle MALLOC = LINKER.downcallHandle(LINKER.defaultLookup().find("malloc").orElseThrow(),
            FunctionDescriptor.of(BYTES, ValueLayout.JAVA_LONG));
    private static final MethodHandle FREE = LINKER.downcallHandle(LINKER.defaultLookup().find("free").orElseThrow(),
            FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
    /** int (*read_buf)(const char *path, struct fuse_bufvec **bufp, size_t size, off_t off, struct fuse_file_info *fi) */
    private static final FunctionDescriptor READ_BUF = FunctionDescriptor.of(ValueLayout.JAVA_INT,
            BYTES, ValueLayout.ADDRESS.withTargetLayout(VECTOR), ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, FILE_INFO);

    private final Os2gFileSystem fs;
    /** The largest read this mount lets the kernel send: one that a pipe here can hold. */
    private final int largestRead;
    private final Arena arena = Arena.ofShared();
    /** Each FUSE thread's pipe; a thread's pipe is closed once the thread has ended. */
    private final ConcurrentHashMap<Thread, ReplyPipe> pipes = new ConcurrentHashMap<>();

    private SplicedReads(Os2gFileSystem fs, int largestRead) {
        this.fs = fs;
        this.largestRead = largestRead;
    }

    /**
     * The largest read whose reply fits a pipe, ours and libfuse's alike: 1 MiB where pipes may grow
     * past /proc/sys/fs/pipe-max-size (CAP_SYS_RESOURCE), else the largest power of two that leaves room
     * in it (512 KiB with the default 1 MiB); 0 when no pipe can be made.
     */
    private static int largestSplicedRead() {
        ReplyPipe probe = ReplyPipe.open(LARGEST_READ + PIPE_SLACK);
        if (probe == null) {
            return 0;
        }
        try {
            int room = probe.capacity() - PIPE_SLACK;
            return room >= LARGEST_READ ? LARGEST_READ : room < MIN_SPLICED ? 0 : Integer.highestOneBit(room);
        } finally {
            probe.close();
        }
    }

    /**
     * Installs the operation into {@code fuse}'s operations before it mounts; null where it cannot be
     * (another platform or jfuse version): reads then go through jfuse's {@code read}.
     */
    static SplicedReads install(Fuse fuse, Os2gFileSystem fs) {
        if (!"amd64".equals(System.getProperty("os.arch")) || !"Linux".equals(System.getProperty("os.name"))) {
            return null;
        }
        int largestRead = largestSplicedRead();
        if (largestRead == 0) {
            return null;
        }
        SplicedReads reads = new SplicedReads(fs, largestRead);
        try {
            Field field = Fuse.class.getDeclaredField("fuseOperationsStruct");
            field.setAccessible(true);
            MemorySegment operations = (MemorySegment) field.get(fuse);
            MethodHandle upcall = MethodHandles.lookup().findVirtual(SplicedReads.class, "readBuf",
                    MethodType.methodType(int.class, MemorySegment.class, MemorySegment.class, long.class, long.class, MemorySegment.class));
            MemorySegment stub = LINKER.upcallStub(upcall.bindTo(reads), READ_BUF, reads.arena);
            operations.set(ValueLayout.ADDRESS, fuse_operations.read_buf$offset(), stub);
            fs.spliceReplies(largestRead);
            return reads;
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            LOG.debug("reads are copied, not spliced: {}", e.toString());
            reads.close();
            return null;
        }
    }

    /** The upcall: never throws (an exception here would end the process). */
    private int readBuf(MemorySegment pathPointer, MemorySegment bufp, long size, long offset, MemorySegment fi) {
        try {
            String path = pathPointer.equals(MemorySegment.NULL) ? "" : pathPointer.getString(0, StandardCharsets.UTF_8);
            long fh = fi.get(ValueLayout.JAVA_LONG, fuse_file_info.fh$offset());
            if (size >= MIN_SPLICED && fs.spliceable()) {
                ReplyPipe pipe = pipe();
                if (pipe != null && size + PIPE_SLACK <= pipe.capacity()) {
                    int n = fs.splice(path, fh, pipe.writeEnd(), size, offset);
                    if (n != Os2gFileSystem.NOT_SPLICED) {
                        return n < 0 ? n : answer(bufp, n, MemorySegment.NULL, pipe.readEnd());
                    }
                    if (pipe.pending() != 0) {
                        replace(pipe); // part of the read went in before the pipe said no
                    }
                }
            }
            MemorySegment memory = malloc(Math.max(size, 1));
            if (memory == null) {
                return -Errno.ENOMEM;
            }
            int n = fs.read(path, fh, memory.asSlice(0, size), size, offset);
            if (n < 0) {
                free(memory);
                return n;
            }
            return answer(bufp, n, memory, -1);
        } catch (Throwable t) {
            LOG.error("read of {} bytes at {} failed", size, offset, t);
            return -Errno.EIO;
        }
    }

    /** Hands libfuse a one-buffer vector: {@code n} bytes in {@code memory}, or in the pipe {@code fd}. */
    private static int answer(MemorySegment bufp, long n, MemorySegment memory, int fd) throws Throwable {
        MemorySegment vector = malloc(BUFVEC.byteSize());
        if (vector == null) {
            if (!memory.equals(MemorySegment.NULL)) {
                free(memory);
            }
            return -Errno.ENOMEM;
        }
        vector = vector.asSlice(0, BUFVEC);
        vector.fill((byte) 0);
        vector.set(ValueLayout.JAVA_LONG, COUNT, 1);
        vector.set(ValueLayout.JAVA_LONG, SIZE, n);
        vector.set(ValueLayout.JAVA_INT, FLAGS, fd >= 0 ? FUSE_BUF_IS_FD : 0);
        vector.set(ValueLayout.ADDRESS, MEM, memory);
        vector.set(ValueLayout.JAVA_INT, FD, fd);
        bufp.set(ValueLayout.ADDRESS, 0, vector);
        return 0;
    }

    /** This thread's pipe, empty; null when none can be made. */
    private ReplyPipe pipe() {
        Thread thread = Thread.currentThread();
        ReplyPipe pipe = pipes.get(thread);
        if (pipe == null) {
            pipes.entrySet().removeIf(e -> {
                if (!e.getKey().isAlive()) {
                    e.getValue().close(); // an ended FUSE thread: libfuse took its last reply already
                    return true;
                }
                return false;
            });
            pipe = ReplyPipe.open(largestRead + PIPE_SLACK);
            if (pipe != null) {
                pipes.put(thread, pipe);
            }
        } else if (pipe.pending() != 0) {
            LOG.warn("a reply pipe still held {} bytes of an earlier read: replaced", pipe.pending());
            pipe = replace(pipe);
        }
        return pipe;
    }

    private ReplyPipe replace(ReplyPipe old) {
        old.close();
        pipes.remove(Thread.currentThread());
        ReplyPipe pipe = ReplyPipe.open(largestRead + PIPE_SLACK);
        if (pipe != null) {
            pipes.put(Thread.currentThread(), pipe);
        }
        return pipe;
    }

    private static MemorySegment malloc(long bytes) throws Throwable {
        MemorySegment memory = (MemorySegment) MALLOC.invokeExact(bytes);
        return memory.equals(MemorySegment.NULL) ? null : memory;
    }

    private static void free(MemorySegment memory) throws Throwable {
        FREE.invokeExact(memory);
    }

    private static long offset(String field) {
        return BUFVEC.byteOffset(MemoryLayout.PathElement.groupElement(field));
    }

    /** After the FUSE loop has ended: closes the pipes and frees the upcall. */
    @Override
    public void close() {
        pipes.values().forEach(ReplyPipe::close);
        pipes.clear();
        arena.close();
    }
}
