package io.os2g.staging;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.BlockingDeque;
import java.util.concurrent.LinkedBlockingDeque;

/**
 * Native buffers that channel bodies are read into on their way to staging, kept for the next fill:
 * a buffer allocated per chunk is zeroed and faulted in page by page, one taken again costs nothing.
 * At most {@code kept} wait between fills, the rest are the garbage collector's to free.
 */
final class FillBufferPool {

    /** Bytes per read(2): large enough that the system calls per byte are few, small enough to stay in cache. */
    static final int SIZE = 256 * 1024;
    /** The process's: as many kept as a mount's fetches in flight by default, 8 MiB at most. */
    static final FillBufferPool SHARED = new FillBufferPool(32);

    private final BlockingDeque<MemorySegment> idle;

    FillBufferPool(int kept) {
        this.idle = new LinkedBlockingDeque<>(kept);
    }

    /** A buffer of {@link #SIZE} bytes, its contents whatever the last fill left. */
    MemorySegment take() {
        MemorySegment buffer = idle.pollFirst();
        return buffer != null ? buffer : Arena.ofAuto().allocate(SIZE, 4096);
    }

    /** Hands {@code buffer} back for the next fill; the caller no longer touches it. */
    void giveBack(MemorySegment buffer) {
        idle.offerFirst(buffer); // the most recent first, its pages the warmest; refused when kept is reached
    }
}
