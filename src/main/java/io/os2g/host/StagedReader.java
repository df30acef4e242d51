package io.os2g.host;

import io.os2g.Errno;
import io.os2g.ErrnoException;
import io.os2g.fuse.ReadReply;
import io.os2g.link.AgentLink;
import io.os2g.link.ReadRequest;
import io.os2g.metrics.ShimMetrics;
import io.os2g.namespace.Node;
import io.os2g.staging.ChunkKey;
import io.os2g.staging.ChunkLayout;
import io.os2g.staging.Restaging;
import io.os2g.staging.StagedChunk;
import io.os2g.staging.StagingView;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Serves {@code read(offset, size)} of an open file from the staging region.
 *
 * <p>For each chunk the read touches: pin the staged chunk and copy from it; on a miss, ask the agent
 * for the rest of the read and wait (bounded by the read deadline). The first read into a chunk that
 * hits is still reported to the agent, without waiting, so that its readahead window moves on.
 */
final class StagedReader {

    private final AgentLink link;
    private final ChunkLayout layout;
    private final ShimMetrics metrics;
    private final long deadlineNanos;

    StagedReader(AgentLink link, ChunkLayout layout, ShimMetrics metrics, Duration deadline) {
        this.link = link;
        this.layout = layout;
        this.metrics = metrics;
        this.deadlineNanos = deadline.toNanos();
    }

    /** Where a read's bytes go, chunk by chunk: copied into memory, or moved into a pipe by reference. */
    interface Target {
        /**
         * Takes {@code count} bytes at {@code offsetInChunk} of a pinned chunk, the read's bytes from
         * {@code done} on; false when it cannot (a pipe that cannot take them).
         */
        boolean take(StagingView staging, StagedChunk chunk, long offsetInChunk, long done, long count);

        /** Lets the pin on a chunk it was given go once it no longer refers to the chunk's pages. */
        default void unpin(StagingView staging, StagedChunk chunk) {
            release(staging, chunk);
        }

        /** Whether it keeps the pins of a read's chunks until the whole read is done (then no chunk may be waited for after the first). */
        default boolean holdsPins() {
            return false;
        }
    }

    /** Copies into native memory (a buffer the reply then takes): a pread from the segment. */
    static Target memory(MemorySegment target) {
        return (staging, chunk, offsetInChunk, done, count) -> {
            staging.copyOut(chunk, offsetInChunk, target, done, count);
            return true;
        };
    }

    /**
     * Moves into a FUSE reply by page reference; the pins are let go when the reply is sent (the region
     * reuses pages in place: until then the reply's bytes are the pages themselves).
     */
    static Target reply(ReadReply reply) {
        return new Target() {
            @Override
            public boolean take(StagingView staging, StagedChunk chunk, long offsetInChunk, long done, long count) {
                return reply.splice(pipe -> staging.spliceOut(chunk, offsetInChunk, pipe, count), count);
            }

            @Override
            public void unpin(StagingView staging, StagedChunk chunk) {
                reply.whenDone(() -> release(staging, chunk));
            }

            @Override
            public boolean holdsPins() {
                return true;
            }
        };
    }

    /**
     * Hands up to {@code size} bytes from {@code offset} to {@code target}; returns the count.
     *
     * @param request the READ being answered: its interruption ends a wait for the agent with EINTR
     * @throws TargetRefused when the target could not take a chunk's bytes (nothing is counted as served)
     */
    int read(OpenHandle handle, Target target, long size, long offset, ReadReply request) {
        Node.File file = handle.file();
        long end = Math.min(file.size(), offset + size);
        long position = offset;
        while (position < end) {
            long chunk = layout.index(position);
            long chunkStart = layout.start(chunk);
            long count = Math.min(end, chunkStart + layout.chunkSize()) - position;
            StagingView staging = link.staging();
            // waiting for a chunk while holding the pins of the ones before could wait for ever in a region
            // they fill: such a read is refused, and done again chunk by chunk into memory
            boolean mayWait = position == offset || !target.holdsPins();
            StagedChunk staged = pin(staging, handle, new ChunkKey(file.inode(), chunk), position, end, position - chunkStart + count,
                    mayWait, request);
            if (staged == null) {
                throw new TargetRefused();
            }
            try {
                if (!target.take(staging, staged, position - chunkStart, position - offset, count)) {
                    throw new TargetRefused();
                }
            } catch (IllegalStateException unmapped) {
                // the agent went away and its region was unmapped under this copy: nothing was returned yet
                throw new HostException(Errno.EIO, "staging region unmapped during the read (agent reconnecting)", unmapped);
            } finally {
                target.unpin(staging, staged);
            }
            position += count;
        }
        int served = (int) (end - Math.min(offset, end));
        metrics.served(served);
        return served;
    }

    /**
     * Stages every chunk of the open file and pins them all, for a consumer that maps the staged bytes
     * in place. A file larger than half the staging region is refused (EFBIG): pinning it would starve
     * every other reader.
     */
    ExtentLease lease(OpenHandle handle) {
        Node.File file = handle.file();
        StagingView staging = link.staging();
        if (file.size() > staging.capacity() / 2) {
            throw new HostException(Errno.EFBIG, file.key() + " (" + file.size() + " bytes) is larger than half the staging region ("
                    + staging.capacity() + " bytes): read it instead of mapping it", null);
        }
        List<StagedChunk> pinned = new ArrayList<>();
        try {
            for (long position = 0; position < file.size(); position = layout.start(layout.index(position) + 1)) {
                long chunk = layout.index(position);
                pinned.add(pin(staging, handle, new ChunkKey(file.inode(), chunk), position, file.size(),
                        layout.length(file.size(), chunk), true, null));
            }
            return new ExtentLease(staging, pinned, file.size(), file.etag());
        } catch (RuntimeException e) {
            pinned.forEach(chunk -> release(staging, chunk));
            throw e;
        }
    }

    private static void release(StagingView staging, StagedChunk staged) {
        try {
            staging.release(staged);
        } catch (IllegalStateException unmapped) {
            // unmapped: the pin went with the region
        }
    }

    /**
     * The chunk pinned with at least its first {@code needed} bytes readable, staged first if need be;
     * null, where {@code mayWait} is false, when they are not readable now.
     */
    private StagedChunk pin(StagingView staging, OpenHandle handle, ChunkKey key, long position, long end, long needed,
                            boolean mayWait, ReadReply request) {
        String etag = handle.file().etag();
        boolean entered = handle.enter(key.index());
        StagedChunk staged = staging.acquire(key, etag, needed);
        if (staged != null) {
            metrics.hit();
            if (entered) {
                link.hint(new ReadRequest(handle.agentHandle(), position, end - position));
            }
            return staged;
        }
        if (!mayWait) {
            return null;
        }
        metrics.miss();
        long deadline = System.nanoTime() + deadlineNanos;
        StagedChunk pinned = Restaging.stageAndPin(timeout -> await(link.stage(new ReadRequest(handle.agentHandle(), position,
                end - position)), handle, request, timeout), () -> staging.acquire(key, etag, needed), deadline);
        if (pinned == null) {
            throw new HostException(Errno.EIO, "chunk evicted before it could be read, again and again for "
                    + TimeUnit.NANOSECONDS.toMillis(deadlineNanos) + " ms (staging region too small for the readers?): key="
                    + handle.file().key() + ", chunk=" + key.index(), null);
        }
        return pinned;
    }

    private void await(CompletableFuture<Void> staged, OpenHandle handle, ReadReply request, long timeoutNanos) {
        CompletableFuture<Void> waited = staged;
        if (request != null) {
            // the fetch goes on for whoever else waits for the chunk; only this wait ends
            CompletableFuture<Void> mine = staged.copy();
            request.whenInterrupted(() -> mine.completeExceptionally(
                    new HostException(Errno.EINTR, "read of " + handle.file().key() + " interrupted", null)));
            waited = mine;
        }
        try {
            waited.get(timeoutNanos, TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof ErrnoException errno) {
                throw errno;
            }
            throw new HostException(Errno.EIO, "read of " + handle.file().key() + " failed: " + e.getCause(), e.getCause());
        } catch (TimeoutException e) {
            throw new HostException(Errno.EIO, "read of " + handle.file().key() + " took longer than "
                    + TimeUnit.NANOSECONDS.toMillis(deadlineNanos) + " ms", null);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new HostException(Errno.EIO, "read interrupted", e);
        }
    }

    /** The target could not take a chunk: the read is to be done again into memory. */
    static final class TargetRefused extends RuntimeException {
        TargetRefused() {
            super(null, null, false, false);
        }
    }
}
