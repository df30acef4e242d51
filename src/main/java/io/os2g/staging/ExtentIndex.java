package io.os2g.staging;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The extent index {@code (inode, chunk) -> staged pages}, and the space policy of the region: the
 * agent's side of the {@link ExtentTable}, which readers in any process use through {@link #view()}.
 *
 * <p>Reads are lock-free: a look into the shared table and a pin. Writers (reserve, publish,
 * eviction) take one lock. Eviction is CLOCK: chunks sit in a ring in publication order; the sweep
 * gives a chunk read since its last pass a second chance, skips pinned ones, and frees the first
 * unpinned one it meets. Replaced chunks (a new ETag) leave the map at once and are freed when the
 * sweep finds them unpinned.
 */
public final class ExtentIndex {

    /** How often a fetch that waits for space looks again for a chunk that became unpinned. */
    private static final long SPACE_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

    /** A staged chunk as the writer tracks it; {@code freed} is guarded by the lock. */
    static final class Entry {
        final ChunkKey key;
        final int slot;
        final int[] pages;
        boolean freed;

        Entry(ChunkKey key, int slot, int[] pages) {
            this.key = key;
            this.slot = slot;
            this.pages = pages;
        }
    }

    private final StagingRegion region;
    private final ExtentTable table;
    private final StagingView view;
    private final Duration reserveTimeout;
    private final HashMap<ChunkKey, Entry> chunks = new HashMap<>();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition spaceFreed = lock.newCondition();
    private final ArrayDeque<Entry> clock = new ArrayDeque<>();
    private final PageAllocator allocator;
    private final LongAdder evictions = new LongAdder();
    /** Pages reserved by fetches not yet published or cancelled; guarded by {@link #lock}. */
    private int inFlightPages;
    /** Pages holding parts of files written through the mount, not yet uploaded; guarded by {@link #lock}. */
    private int uploadPages;

    /**
     * @param maxChunkBytes the largest chunk that will be staged (the chunk size): a slot of the
     *     shared table holds that many bytes' worth of page numbers
     */
    public ExtentIndex(StagingRegion region, long maxChunkBytes) {
        this.region = region;
        this.reserveTimeout = region.config().reserveTimeout();
        this.allocator = new PageAllocator(region.pageCount());
        int maxPages = (int) Math.min(region.pageCount(), (maxChunkBytes + region.pageSize() - 1) / region.pageSize());
        try {
            this.table = ExtentTable.create(region.config().directory(), region.pageCount(), Math.max(1, maxPages), region.arena());
        } catch (IOException e) {
            throw new StagingException("cannot create the extent table in " + region.config().directory() + ": "
                    + StagingDirectory.describe(e), e);
        }
        this.view = new StagingView(region, table, false);
    }

    StagingRegion region() {
        return region;
    }

    /** The readers' side of this index. */
    public StagingView view() {
        return view;
    }

    /**
     * Sets aside pages for {@code length} bytes, evicting unpinned chunks as needed; waits while every
     * page is pinned or in flight.
     *
     * @throws StagingException when the chunk can never fit, or no space came free before the deadline
     */
    public Reservation reserve(int length) {
        return reserve(length, false);
    }

    /**
     * Sets aside pages for {@code length} bytes of a file written through the mount (one part of its
     * upload): like {@link #reserve}, but never published, so not bound to the chunk size. Counted as
     * upload bytes until cancelled.
     */
    public Reservation reserveForUpload(int length) {
        return reserve(length, true);
    }

    private Reservation reserve(int length, boolean upload) {
        int pageSize = region.pageSize();
        int needed = Math.max(1, (length + pageSize - 1) / pageSize);
        if (needed > allocator.capacity() || (!upload && needed > table.maxPages())) {
            throw new StagingException("chunk larger than the staging region or its chunk size: length=" + length
                    + ", capacity=" + (long) allocator.capacity() * pageSize + ", maxChunk=" + (long) table.maxPages() * pageSize);
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
            if (upload) {
                uploadPages += needed;
            } else {
                inFlightPages += needed;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StagingException("interrupted while waiting for staging space", e);
        } finally {
            lock.unlock();
        }
        return new Reservation(this, length, pages, upload);
    }

    void publish(ChunkKey key, String etag, int length, int[] pages) {
        lock.lock();
        try {
            inFlightPages -= pages.length;
            try {
                enter(key, etag, length, length, pages);
            } catch (StagingException e) {
                allocator.give(pages);
                spaceFreed.signalAll();
                throw e;
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Publishes a chunk whose bytes are still to come: readers find it and may read what {@link #filled}
     * says has arrived. It stays pinned by the writer, so counted in flight and never evicted, until
     * {@link #finishFilling} or {@link #abandonFilling}. On failure (no slot) the pages stay reserved.
     */
    Entry publishFilling(ChunkKey key, String etag, int length, int[] pages) {
        lock.lock();
        try {
            return enter(key, etag, length, 0, pages);
        } finally {
            lock.unlock();
        }
    }

    /** Makes the first {@code bytes} of a chunk being filled readable. */
    void filled(Entry entry, int bytes) {
        table.setFilled(entry.slot, bytes);
    }

    /** All of a filling chunk's bytes have arrived: it is staged like any other. */
    void finishFilling(Entry entry, int length) {
        table.setFilled(entry.slot, length);
        lock.lock();
        try {
            inFlightPages -= entry.pages.length;
            table.unpin(entry.slot);
        } finally {
            lock.unlock();
        }
    }

    /** A filling chunk's fetch failed: nobody finds it again; its pages are freed once no reader holds them. */
    void abandonFilling(Entry entry) {
        lock.lock();
        try {
            inFlightPages -= entry.pages.length;
            table.retire(entry.slot);
            chunks.remove(entry.key, entry);
            table.unpin(entry.slot);
            tryFree(entry); // or by the sweep, once readers let it go
        } finally {
            lock.unlock();
        }
    }

    /** Puts a chunk into a free slot of its window and the ring. Under the lock. */
    private Entry enter(ChunkKey key, String etag, int length, int filled, int[] pages) {
        int slot = table.freeSlot(key.inode(), key.index());
        if (slot < 0) {
            slot = makeRoomInWindow(key);
        }
        if (slot < 0) {
            throw new StagingException("no free slot for " + key + ": all " + ExtentTable.WINDOW + " of its window are pinned");
        }
        table.publish(slot, key.inode(), key.index(), ExtentTable.etagHash(etag), length, filled, pages);
        Entry entry = new Entry(key, slot, pages);
        Entry old = chunks.put(key, entry);
        clock.addLast(entry);
        if (old != null) {
            tryFree(old);
        }
        return entry;
    }

    /** Frees an unpinned chunk of {@code key}'s window, so that {@code key} can have its slot. Under the lock. */
    private int makeRoomInWindow(ChunkKey key) {
        for (int i = 0; i < ExtentTable.WINDOW; i++) {
            int slot = table.windowSlot(key.inode(), key.index(), i);
            for (Entry e : clock) {
                if (e.slot == slot && !e.freed && tryFree(e)) {
                    return slot;
                }
            }
        }
        return -1;
    }

    /** Frees an entry's slot and pages if no reader holds it. Under the lock. */
    private boolean tryFree(Entry e) {
        if (e.freed || !table.tryFree(e.slot)) {
            return false;
        }
        e.freed = true;
        chunks.remove(e.key, e);
        allocator.give(e.pages);
        spaceFreed.signalAll();
        return true;
    }

    /** Gives back the pages of a reservation that will not be published (or of an uploaded part). */
    void cancel(int[] pages, boolean upload) {
        lock.lock();
        try {
            if (upload) {
                uploadPages -= pages.length;
            } else {
                inFlightPages -= pages.length;
            }
            allocator.give(pages);
            spaceFreed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** One CLOCK sweep (at most two passes over the ring); true when it freed a chunk. Under the lock. */
    private boolean evictOne() {
        for (int budget = 2 * clock.size(); budget > 0; budget--) {
            Entry entry = clock.pollFirst();
            if (entry == null) {
                return false;
            }
            if (entry.freed) {
                continue; // replaced and already freed
            }
            boolean replaced = chunks.get(entry.key) != entry;
            if (table.takeReferenced(entry.slot) && !replaced) {
                clock.addLast(entry);
                continue;
            }
            if (tryFree(entry)) {
                evictions.increment();
                return true;
            }
            clock.addLast(entry); // pinned by a reader
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
        lock.lock();
        try {
            return chunks.size();
        } finally {
            lock.unlock();
        }
    }

    /** Staged chunks a reader holds pinned now (a moment's answer: for stats and the unmount check). */
    public int pinnedChunks() {
        lock.lock();
        try {
            int n = 0;
            for (Entry e : clock) {
                if (!e.freed && table.pinCount(e.slot) > 0) {
                    n++;
                }
            }
            return n;
        } finally {
            lock.unlock();
        }
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

    /** Bytes of files written through the mount that wait in staging for their upload. */
    public long uploadBytes() {
        lock.lock();
        try {
            return (long) uploadPages * region.pageSize();
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

    /** The unit of staging space: a chunk takes its length rounded up to whole pages. */
    public int pageSize() {
        return region.pageSize();
    }

    public long capacityBytes() {
        return (long) allocator.capacity() * region.pageSize();
    }

    public long evictions() {
        return evictions.sum();
    }
}
