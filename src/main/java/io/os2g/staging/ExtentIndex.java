package io.os2g.staging;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The extent index {@code (inode, chunk) -> staged pages}, and the space policy of the region.
 *
 * <p>Reads ({@link #acquire}) are lock-free: a hash lookup and a pin. Writers (reserve, publish,
 * eviction) take one lock. Eviction is CLOCK: chunks sit in a ring in publication order; the sweep
 * gives a chunk read since its last pass a second chance, skips pinned ones, and frees the first
 * unpinned one it meets. Replaced chunks (a new ETag) leave the map at once and are freed when their
 * last reader unpins.
 */
public final class ExtentIndex {

    /** How often a fetch that waits for space looks again for a chunk that became unpinned. */
    private static final long SPACE_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

    private final StagingRegion region;
    private final Duration reserveTimeout;
    private final ConcurrentHashMap<ChunkKey, StagedChunk> chunks = new ConcurrentHashMap<>();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition spaceFreed = lock.newCondition();
    private final ArrayDeque<StagedChunk> clock = new ArrayDeque<>();
    private final PageAllocator allocator;
    private final LongAdder evictions = new LongAdder();
    /** Pages reserved by fetches not yet published or cancelled; guarded by {@link #lock}. */
    private int inFlightPages;

    public ExtentIndex(StagingRegion region) {
        this.region = region;
        this.reserveTimeout = region.config().reserveTimeout();
        this.allocator = new PageAllocator(region.pageCount());
    }

    StagingRegion region() {
        return region;
    }

    /**
     * The staged chunk for {@code key} at version {@code etag}, pinned; null when it is not staged (a
     * miss). The caller copies, then {@link #release}s it.
     */
    public StagedChunk acquire(ChunkKey key, String etag) {
        StagedChunk chunk = chunks.get(key);
        if (chunk == null || !chunk.etag().equals(etag) || !chunk.tryPin()) {
            return null;
        }
        if (!chunk.referenced) {
            chunk.referenced = true;
        }
        return chunk;
    }

    /** Whether {@code key} at {@code etag} is staged now (no pin: the answer may change at once). */
    public boolean contains(ChunkKey key, String etag) {
        StagedChunk chunk = chunks.get(key);
        return chunk != null && chunk.etag().equals(etag) && !chunk.dead();
    }

    /** Copies bytes of a pinned chunk into {@code target}. */
    public void copyOut(StagedChunk chunk, long offset, MemorySegment target, long targetOffset, long length) {
        if (offset < 0 || offset + length > chunk.length()) {
            throw new IndexOutOfBoundsException("copy outside chunk: offset=" + offset + ", length=" + length
                    + ", chunkLength=" + chunk.length());
        }
        region.copyOut(chunk.pages(), offset, target, targetOffset, length);
    }

    public void release(StagedChunk chunk) {
        chunk.unpin();
    }

    /**
     * Sets aside pages for {@code length} bytes, evicting unpinned chunks as needed; waits while every
     * page is pinned or in flight.
     *
     * @throws StagingException when the chunk can never fit, no space came free before the deadline,
     *     or the file system behind the region is full
     */
    public Reservation reserve(int length) {
        int pageSize = region.pageSize();
        int needed = Math.max(1, (length + pageSize - 1) / pageSize);
        if (needed > allocator.capacity()) {
            throw new StagingException("chunk larger than the staging region: length=" + length
                    + ", capacity=" + (long) allocator.capacity() * pageSize);
        }
        long deadline = System.nanoTime() + reserveTimeout.toNanos();
        int[] pages;
        lock.lock();
        try {
            while (allocator.freePages() < needed) {
                if (evictOne()) {
                    continue;
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new StagingException("staging region full: every page is pinned or in flight; required="
                            + needed + " pages, free=" + allocator.freePages() + ", waited=" + reserveTimeout.toMillis() + " ms");
                }
                spaceFreed.awaitNanos(Math.min(left, SPACE_POLL_NANOS));
            }
            pages = allocator.take(needed);
            inFlightPages += needed;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StagingException("interrupted while waiting for staging space", e);
        } finally {
            lock.unlock();
        }
        int highest = 0;
        for (int page : pages) {
            highest = Math.max(highest, page);
        }
        try {
            region.populateBelow(highest + 1);
        } catch (StagingException e) {
            cancel(pages);
            throw e;
        }
        return new Reservation(this, length, pages);
    }

    StagedChunk publish(ChunkKey key, String etag, int length, int[] pages) {
        StagedChunk chunk = new StagedChunk(key, etag, length, pages);
        lock.lock();
        try {
            inFlightPages -= pages.length;
            StagedChunk old = chunks.put(key, chunk);
            clock.addLast(chunk);
            if (old != null && old.tryKill()) {
                allocator.give(old.pages());
                spaceFreed.signalAll();
            }
        } finally {
            lock.unlock();
        }
        return chunk;
    }

    /** Gives back the pages of a reservation that will not be published. */
    void cancel(int[] pages) {
        lock.lock();
        try {
            inFlightPages -= pages.length;
            allocator.give(pages);
            spaceFreed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** One CLOCK sweep (at most two passes over the ring); true when it freed a chunk. Under the lock. */
    private boolean evictOne() {
        for (int budget = 2 * clock.size(); budget > 0; budget--) {
            StagedChunk chunk = clock.pollFirst();
            if (chunk == null) {
                return false;
            }
            if (chunk.dead()) {
                continue; // replaced and already freed
            }
            boolean replaced = chunks.get(chunk.key()) != chunk;
            if (!replaced && chunk.referenced) {
                chunk.referenced = false;
                clock.addLast(chunk);
                continue;
            }
            if (chunk.tryKill()) {
                chunks.remove(chunk.key(), chunk);
                allocator.give(chunk.pages());
                evictions.increment();
                return true;
            }
            clock.addLast(chunk); // pinned by a reader
        }
        return false;
    }

    /** Drops every unpinned chunk (tests, and the end of a mount). Returns how many were dropped. */
    public int evictAll() {
        lock.lock();
        try {
            int n = 0;
            while (evictOne()) {
                n++;
            }
            return n;
        } finally {
            lock.unlock();
        }
    }

    public int stagedChunks() {
        return chunks.size();
    }

    /** Staged chunks a reader holds pinned now (a moment's answer: for stats and the unmount check). */
    public int pinnedChunks() {
        int n = 0;
        for (StagedChunk chunk : chunks.values()) {
            if (chunk.pinCount() > 0) {
                n++;
            }
        }
        return n;
    }

    /** Bytes reserved by fetches in flight, not yet published. */
    public long inFlightBytes() {
        lock.lock();
        try {
            return (long) inFlightPages * region.pageSize();
        } finally {
            lock.unlock();
        }
    }

    public long freeBytes() {
        lock.lock();
        try {
            return (long) allocator.freePages() * region.pageSize();
        } finally {
            lock.unlock();
        }
    }

    public long capacityBytes() {
        return (long) allocator.capacity() * region.pageSize();
    }

    public long evictions() {
        return evictions.sum();
    }
}
