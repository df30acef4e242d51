package io.os2g.staging;

import io.os2g.PerThread;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The segment files of a region, open for pread(2) and pwrite(2): the data path of the staging
 * region. The kernel copies between its own mapping of the shared-memory pages and the caller's buffer,
 * so no process pays to map each staging page into its own page tables: the first touch of a freshly
 * mapped page is dear (a fault, and in a VM a trip through the hypervisor), and every process that read
 * or wrote a region through its own mapping would pay it once per page. (A host's region filled from
 * another machine is the exception: its one receiver maps it, {@link SegmentMappings}.)
 *
 * <p>Descriptors rather than {@code FileChannel}s: a channel is closed for every thread when one
 * thread using it is interrupted (fetches are interrupted when an agent closes). The calls are
 * critical (no safepoint during them, heap arrays passed in place): each copies at most one chunk of
 * tmpfs pages and never blocks on I/O.
 */
final class SegmentFiles implements AutoCloseable {

    private static final int O_RDONLY = 0;
    private static final int O_RDWR = 2;
    private static final int O_CLOEXEC = 0x80000;
    private static final int EINTR = 4;
    private static final int EAGAIN = 11;
    private static final int ENOSPC = 28;
    private static final int SPLICE_F_NONBLOCK = 2;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final MethodHandle OPEN = LINKER.downcallHandle(
            LINKER.defaultLookup().find("open").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
            Linker.Option.firstVariadicArg(2), Linker.Option.captureCallState("errno"));
    private static final FunctionDescriptor TRANSFER = FunctionDescriptor.of(ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG);
    private static final MethodHandle PREAD = LINKER.downcallHandle(LINKER.defaultLookup().find("pread").orElseThrow(),
            TRANSFER, Linker.Option.critical(true), Linker.Option.captureCallState("errno"));
    private static final MethodHandle PWRITE = LINKER.downcallHandle(LINKER.defaultLookup().find("pwrite").orElseThrow(),
            TRANSFER, Linker.Option.critical(true), Linker.Option.captureCallState("errno"));
    private static final MethodHandle SPLICE = LINKER.downcallHandle(LINKER.defaultLookup().find("splice").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT,
                    ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT),
            Linker.Option.critical(false), Linker.Option.captureCallState("errno"));
    private static final MethodHandle CLOSE = LINKER.downcallHandle(LINKER.defaultLookup().find("close").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));

    /** Where a transfer's errno is captured, one per thread (critical calls take no allocation on the read path). */
    private static final PerThread<MemorySegment> CALL_STATES =
            PerThread.withInitial(() -> Arena.ofAuto().allocate(CALL_STATE));
    /** A {@code loff_t} for splice(2), which advances it. */
    private static final PerThread<MemorySegment> SPLICE_OFFSETS =
            PerThread.withInitial(() -> Arena.ofAuto().allocate(ValueLayout.JAVA_LONG));

    private final List<Path> files;
    private final int[] descriptors;
    /** Transfers in progress, plus {@link #CLOSED} once {@link #close} is called; the files close at exactly CLOSED. */
    private final AtomicInteger users = new AtomicInteger();
    private final AtomicBoolean closing = new AtomicBoolean();
    private static final int CLOSED = 1 << 30;

    /** Opens every file, read-write for the region's owner, read-only for a reader in another process. */
    SegmentFiles(List<Path> files, boolean writable) throws IOException {
        this.files = List.copyOf(files);
        this.descriptors = new int[files.size()];
        int opened = 0;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            for (; opened < descriptors.length; opened++) {
                int fd = (int) OPEN.invokeExact(state, arena.allocateFrom(files.get(opened).toString()),
                        (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC, 0);
                if (fd < 0) {
                    throw new IOException("cannot open " + files.get(opened) + ": errno " + (int) ERRNO.get(state, 0L));
                }
                descriptors[opened] = fd;
            }
        } catch (IOException | RuntimeException | Error e) {
            closeFirst(opened);
            throw e;
        } catch (Throwable t) {
            closeFirst(opened);
            throw new IOException("cannot open the staging segments", t);
        }
    }

    /** Copies {@code length} bytes at {@code offset} of segment {@code segment} into {@code target}. */
    void read(int segment, long offset, MemorySegment target, long targetOffset, long length) {
        enter();
        try (PerThread.Lease<MemorySegment> state = CALL_STATES.take()) {
            readOpen(segment, offset, target, targetOffset, length, state.value());
        } finally {
            exit();
        }
    }

    private void readOpen(int segment, long offset, MemorySegment target, long targetOffset, long length, MemorySegment state) {
        long done = 0;
        while (done < length) {
            long n;
            try {
                n = (long) PREAD.invokeExact(state, descriptors[segment], target.asSlice(targetOffset + done, length - done),
                        length - done, offset + done);
            } catch (Throwable t) {
                throw new StagingException("pread of staging segment " + files.get(segment) + " failed: " + t, t);
            }
            if (n > 0) {
                done += n;
            } else if (n == 0) {
                throw new StagingException("staging segment " + files.get(segment) + " ends before offset " + (offset + done), null);
            } else if ((int) ERRNO.get(state, 0L) != EINTR) {
                throw new StagingException("pread of staging segment " + files.get(segment) + " failed: errno "
                        + (int) ERRNO.get(state, 0L), null);
            }
        }
    }

    /**
     * Copies {@code source} (an array's bytes or native memory) into segment {@code segment} at {@code offset}.
     *
     * @throws StagingException when the file system behind the segments has no room for the pages
     */
    void write(int segment, long offset, MemorySegment source) {
        enter();
        try (PerThread.Lease<MemorySegment> state = CALL_STATES.take()) {
            writeOpen(segment, offset, source, state.value());
        } finally {
            exit();
        }
    }

    private void writeOpen(int segment, long offset, MemorySegment source, MemorySegment state) {
        long length = source.byteSize();
        long done = 0;
        while (done < length) {
            long n;
            try {
                n = (long) PWRITE.invokeExact(state, descriptors[segment], source.asSlice(done),
                        length - done, offset + done);
            } catch (Throwable t) {
                throw new StagingException("pwrite of staging segment " + files.get(segment) + " failed: " + t, t);
            }
            int errno = n < 0 ? (int) ERRNO.get(state, 0L) : 0;
            if (n > 0) {
                done += n;
            } else if (errno != EINTR) {
                throw new StagingException(errno == ENOSPC
                        ? "no room for staging pages in " + files.get(segment).getParent()
                          + " (its file system is full): the region was sized beyond what it can hold"
                        : "pwrite of staging segment " + files.get(segment) + " failed: errno " + errno, null);
            }
        }
    }

    /**
     * Moves {@code length} bytes at {@code offset} of segment {@code segment} into the pipe {@code pipe}
     * without copying them: the pipe takes references to the tmpfs pages. Never blocks: returns the
     * bytes moved, fewer than {@code length} when the pipe is full.
     */
    long splice(int segment, long offset, int pipe, long length) {
        enter();
        try (PerThread.Lease<MemorySegment> state = CALL_STATES.take();
             PerThread.Lease<MemorySegment> position = SPLICE_OFFSETS.take()) {
            return spliceOpen(segment, offset, pipe, length, state.value(), position.value());
        } finally {
            exit();
        }
    }

    private long spliceOpen(int segment, long offset, int pipe, long length, MemorySegment state, MemorySegment position) {
        position.set(ValueLayout.JAVA_LONG, 0, offset);
        long done = 0;
        while (done < length) {
            long n;
            try {
                n = (long) SPLICE.invokeExact(state, descriptors[segment], position, pipe, MemorySegment.NULL, length - done,
                        SPLICE_F_NONBLOCK);
            } catch (Throwable t) {
                throw new StagingException("splice of staging segment " + files.get(segment) + " failed: " + t, t);
            }
            int errno = n < 0 ? (int) ERRNO.get(state, 0L) : 0;
            if (n > 0) {
                done += n;
            } else if (n == 0) {
                throw new StagingException("staging segment " + files.get(segment) + " ends before offset " + (offset + done), null);
            } else if (errno == EAGAIN) {
                return done;
            } else if (errno != EINTR) {
                throw new StagingException("splice of staging segment " + files.get(segment) + " failed: errno " + errno, null);
            }
        }
        return done;
    }

    /** Counts a transfer in; throws IllegalStateException once the files are closed (the region went away). */
    private void enter() {
        int s;
        do {
            s = users.get();
            if (s >= CLOSED) {
                throw new IllegalStateException("staging segments closed");
            }
        } while (!users.compareAndSet(s, s + 1));
    }

    private void exit() {
        if (users.decrementAndGet() == CLOSED) {
            closeFirst(descriptors.length);
        }
    }

    /**
     * Closes the descriptors once no transfer is using them: a descriptor closed under a transfer could
     * be reused by the next open(2) and the transfer would read another file's bytes.
     */
    @Override
    public void close() {
        if (closing.compareAndSet(false, true) && users.addAndGet(CLOSED) == CLOSED) {
            closeFirst(descriptors.length);
        }
    }

    private void closeFirst(int count) {
        for (int i = 0; i < count; i++) {
            try {
                int ignored = (int) CLOSE.invokeExact(descriptors[i]);
            } catch (Throwable ignored) {
                // nothing to do: the descriptor goes with the process at worst
            }
        }
    }
}
