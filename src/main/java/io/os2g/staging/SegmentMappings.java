package io.os2g.staging;

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
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.BitSet;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A region's segments mapped into this process, so that a socket read lands posted bytes straight in
 * their pages: one copy, the kernel's, from the socket to staging. Before each read the pages are made
 * present with {@code MADV_POPULATE_WRITE}, one call for the whole run, so the copy takes no fault per
 * page and a file system with no room left is an error here rather than a short read. Pages stay
 * present once made so (they are reused, never punched out): only a run with a page new to this
 * mapping is populated.
 *
 * <p>Only the side that receives maps them (a host's region filled from another machine); everything
 * else moves bytes with pread, pwrite and splice ({@link SegmentFiles}).
 */
final class SegmentMappings implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(SegmentMappings.class);
    private static final int MADV_POPULATE_WRITE = 23;
    private static final int EINVAL = 22;
    private static final int ENOMEM = 12;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final MethodHandle MADVISE = LINKER.downcallHandle(LINKER.defaultLookup().find("madvise").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT),
            Linker.Option.captureCallState("errno"));
    private static final ThreadLocal<MemorySegment> CALL_STATES =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(CALL_STATE));
    /** Cleared when the kernel does not know MADV_POPULATE_WRITE (before 5.14): the copy then faults the pages in. */
    private static volatile boolean populate = true;

    private final Arena arena = Arena.ofShared();
    private final List<Path> files;
    private final MemorySegment[] mapped;
    private final int pageShift;
    /** Per segment, the pages made present here; guarded by {@code this}. */
    private final BitSet[] present;

    SegmentMappings(List<Path> files, long[] sizes, int pageSize) throws IOException {
        this.files = List.copyOf(files);
        this.mapped = new MemorySegment[files.size()];
        this.pageShift = Integer.numberOfTrailingZeros(pageSize);
        this.present = new BitSet[files.size()];
        for (int i = 0; i < present.length; i++) {
            present[i] = new BitSet();
        }
        try {
            for (int i = 0; i < mapped.length; i++) {
                try (FileChannel file = FileChannel.open(files.get(i), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                    mapped[i] = file.map(FileChannel.MapMode.READ_WRITE, 0, sizes[i], arena);
                }
            }
        } catch (IOException | RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    /**
     * {@code length} bytes at {@code offset} of segment {@code segment}, present, as a buffer to read into.
     *
     * @throws IOException when the pages cannot be made present (the file system behind them is full)
     */
    synchronized ByteBuffer writable(int segment, long offset, long length) throws IOException {
        MemorySegment pages = mapped[segment].asSlice(offset, length);
        int first = (int) (offset >>> pageShift);
        int end = (int) (((offset + length - 1) >>> pageShift) + 1);
        BitSet made = present[segment];
        if (populate && made.nextClearBit(first) < end) {
            populate(segment, pages);
            made.set(first, end);
        }
        return pages.asByteBuffer();
    }

    /** {@code length} bytes at {@code offset} of segment {@code segment}, which hold a chunk, as a buffer to read from. */
    ByteBuffer readable(int segment, long offset, long length) {
        return mapped[segment].asSlice(offset, length).asByteBuffer().asReadOnlyBuffer();
    }

    private void populate(int segment, MemorySegment pages) throws IOException {
        MemorySegment state = CALL_STATES.get();
        int rc;
        try {
            rc = (int) MADVISE.invokeExact(state, pages, pages.byteSize(), MADV_POPULATE_WRITE);
        } catch (Throwable t) {
            throw new IOException("madvise of staging segment " + files.get(segment) + " failed: " + t, t);
        }
        if (rc == 0) {
            return;
        }
        int errno = (int) ERRNO.get(state, 0L);
        if (errno == EINVAL) {
            populate = false;
            LOG.info("this kernel cannot populate staging pages ahead (MADV_POPULATE_WRITE): posted bytes fault them in");
            return;
        }
        throw new IOException(errno == ENOMEM
                ? "no room for staging pages in " + files.get(segment).getParent() + " (its file system is full)"
                : "cannot make staging pages of " + files.get(segment) + " present: errno " + errno);
    }

    /**
     * Unmaps the segments. A read still under way into them (a receiver whose socket was just closed)
     * holds them for a moment: waits up to a second for it, then leaves the mapping to the process.
     */
    @Override
    public void close() {
        for (int tries = 0; ; tries++) {
            try {
                arena.close();
                return;
            } catch (IllegalStateException busy) {
                if (tries == 100) {
                    LOG.warn("staging segments in {} stay mapped: a read into them did not end", files.get(0).getParent());
                    return;
                }
                try {
                    Thread.sleep(10);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }
}
