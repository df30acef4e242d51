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
 * sweep finds them unpinned. Chunks a sequential reader has moved past ({@link #consumed}: a shard, a
 * checkpoint, a {@code cp}, read once in order) go before the sweep's choice, so a scan through a large
 * file recycles its own pages rather than pushing out a dataset that is read again each epoch.
 */
public final class ExtentIndex {

    /** How often a fetch that waits for space looks again for a chunk that became unpinned. */
    private static final long SPACE_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

    /**
     * Where the region's chunks are copied when its reader is on another machine: the agent's pages
     * are posted to the host's region, into the same page and slot numbers. Called under the index's
     * lock, in the order things happen to a slot, so it only queues: a chunk is {@link #posted} once
     * whole, and {@link #recalled} when evicted here; its slot and pages stay taken until the other side
     * frees them and says so ({@link ExtentIndex#returned}).
     */
    public interface Mirror {
        void posted(int slot, ChunkKey key, long etagHash, int length, int[] pages);

        void recalled(int slot);
    }

    /** A chunk the other side holds in its copy of the region, taken over when a session starts again. */
    public record Held(int slot, ChunkKey key, long etagHash, int length, int[] pages) {
        @Override
        public boolean equals(Object o) {
            return o instanceof Held h && h.slot == slot && h.key.equals(key) && h.etagHash == etagHash && h.length == length
                    && java.util.Arrays.equals(h.pages, pages);
        }

        @Override
        public int hashCode() {
            return java.util.Objects.hash(slot, key, etagHash, length, java.util.Arrays.hashCode(pages));
        }
    }

    /** A staged chunk as the writer tracks it; the flags are guarded by the lock. */
    static final class Entry {
        final ChunkKey key;
        final int slot;
        final int[] pages;
        boolean freed;
        /** Posted to the mirror: freeing it waits for the mirror to give it back. */
        boolean mirrored;
        /** Evicted here, waiting for the mirror to free its copy. */
        boolean recalled;
        /** In the consumed queue. */
        boolean consumed;

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
    /** Chunks a sequential reader has moved past, oldest first: evicted before the clock's choice. */
    private final ArrayDeque<Entry> consumed = new ArrayDeque<>();
    private final PageAllocator allocator;
    private final LongAdder evictions = new LongAdder();
    /** Null where readers share this region's memory. */
    private final Mirror mirror;
    /** Chunks recalled from the mirror and not given back yet, by slot; guarded by {@link #lock}. */
    private final HashMap<Integer, Entry> recalled = new HashMap<>();
    /** Pages of {@link #recalled}: space that comes free once the mirror answers; guarded by {@link #lock}. */
    private int recallingPages;
    /** Pages reserved by fetches not yet published or cancelled; guarded by {@link #lock}. */
    private int inFlightPages;
    /** Pages holding parts of files written through the mount, not yet uploaded; guarded by {@link #lock}. */
    private int uploadPages;

    /**
     * @param maxChunkBytes the largest chunk that will be staged (the chunk size): a slot of the
     *     shared table holds that many bytes' worth of page numbers
     */
    public ExtentIndex(StagingRegion region, long maxChunkBytes) {
        this(region, maxChunkBytes, null, java.util.List.of());
    }

    /**
     * An index whose chunks are mirrored into another machine's region ({@code mirror}), which already
     * holds {@code held} (from an earlier session with this mirror): those start staged here, in their
     * slots and pages, with no bytes on this side.
     *
     * @throws StagingException when {@code held} does not fit this region (slots or pages out of range or shared)
     */
    public ExtentIndex(StagingRegion region, long maxChunkBytes, Mirror mirror, java.util.List<Held> held) {
        this.region = region;
        this.reserveTimeout = region.config().reserveTimeout();
        this.mirror = mirror;
        int maxPages = maxPages(region.pageCount(), region.pageSize(), maxChunkBytes);
        java.util.BitSet taken = heldPages(held, region.pageCount(), maxPages);
        this.allocator = new PageAllocator(region.pageCount(), taken);
        try {
            this.table = ExtentTable.create(region.config().directory(), region.pageCount(), maxPages, region.arena());
        } catch (IOException e) {
            throw new StagingException("cannot create the extent table in " + region.config().directory() + ": "
                    + StagingDirectory.describe(e), e);
        }
        this.view = new StagingView(region, table, false);
        for (Held h : held) {
            if (h.slot() < 0 || h.slot() >= table.slotCount() || !table.isFree(h.slot())) {
                throw new StagingException("held chunk in slot " + h.slot() + " does not fit a table of " + table.slotCount(), null);
            }
            table.publish(h.slot(), h.key().inode(), h.key().index(), h.etagHash(), h.length(), h.length(), h.pages());
            Entry entry = new Entry(h.key(), h.slot(), h.pages());
            entry.mirrored = true;
            chunks.put(h.key(), entry);
            clock.addLast(entry);
        }
    }

    /** Pages a slot of the extent table holds: a chunk's worth, within the region. */
    static int maxPages(int pageCount, int pageSize, long maxChunkBytes) {
        return Math.max(1, (int) Math.min(pageCount, (maxChunkBytes + pageSize - 1) / pageSize));
    }

    /** The pages {@code held} takes, each once and in range, and each chunk's no more than a chunk's worth. */
    private static java.util.BitSet heldPages(java.util.List<Held> held, int pageCount, int maxPages) {
        java.util.BitSet taken = new java.util.BitSet(pageCount);
        for (Held h : held) {
            if (h.pages().length == 0 || h.pages().length > maxPages || h.length() < 0
                    || h.length() > (long) h.pages().length * (1L << 30)) {
                throw new StagingException("held chunk in slot " + h.slot() + " has " + h.pages().length + " pages", null);
            }
            for (int page : h.pages()) {
                if (page < 0 || page >= pageCount || taken.get(page)) {
                    throw new StagingException("held chunk in slot " + h.slot() + " names page " + page + " twice or out of range", null);
                }
                taken.set(page);
            }
        }
        return taken;
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
                if (allocator.freePages() + recallingPages < needed && evictOne()) {
                    continue;
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new StagingException("staging region full: every page is pinned, in flight or being recalled; required="
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
            post(entry);
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
        if (filled == length) {
            post(entry);
        }
        if (old != null) {
            tryFree(old);
        }
        return entry;
    }

    /**
     * Sends the first {@code length} bytes of {@code pages} to {@code to} (a chunk posted to the mirror,
     * whose pages stay this chunk's until the mirror gives them back).
     */
    public void transferPages(int[] pages, long length, java.nio.channels.WritableByteChannel to) throws IOException {
        region.transferTo(pages, 0, length, to);
    }

    /** Hands a chunk staged whole to the mirror. Under the lock. */
    private void post(Entry entry) {
        if (mirror != null && !entry.freed && table.length(entry.slot) == table.filled(entry.slot)) {
            entry.mirrored = true;
            mirror.posted(entry.slot, entry.key, table.etagHashOf(entry.slot), table.length(entry.slot), entry.pages);
        }
    }

    /**
     * The mirror freed its copy of the chunk it was asked to give back in {@code slot}: the slot and
     * pages are this side's again (freed now, or by the sweep once a reader here lets go). A slot that
     * was not recalled is ignored.
     */
    public void returned(int slot) {
        lock.lock();
        try {
            Entry e = recalled.remove(slot);
            if (e == null) {
                return;
            }
            recallingPages -= e.pages.length;
            e.recalled = false;
            e.mirrored = false;
            if (!tryFree(e)) {
                clock.addLast(e);
            }
            spaceFreed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Frees an unpinned chunk of {@code key}'s window, so that {@code key} can have its slot. Under the lock. */
    private int makeRoomInWindow(ChunkKey key) {
        for (int i = 0; i < ExtentTable.WINDOW; i++) {
            int slot = table.windowSlot(key.inode(), key.index(), i);
            for (Entry e : clock) {
                if (e.slot == slot && !e.freed && !e.mirrored && tryFree(e)) {
                    return slot;
                }
            }
        }
        return -1;
    }

    /**
     * Frees an entry's slot and pages if no reader holds it; a mirrored one is recalled instead (its
     * space comes back with {@link #returned}). True when freed or recalled now. Under the lock.
     */
    private boolean tryFree(Entry e) {
        if (e.freed || e.recalled) {
            return false;
        }
        if (e.mirrored) {
            if (table.pinCount(e.slot) > 0) {
                return false;
            }
            table.retire(e.slot);
            chunks.remove(e.key, e);
            e.recalled = true;
            recalled.put(e.slot, e);
            recallingPages += e.pages.length;
            mirror.recalled(e.slot);
            return true;
        }
        if (!table.tryFree(e.slot)) {
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

    /**
     * A sequential reader has moved past {@code key}: the chunk goes before the clock's choice when room
     * is needed, unless someone reads it again first.
     */
    public void consumed(ChunkKey key) {
        lock.lock();
        try {
            Entry e = chunks.get(key);
            if (e != null && !e.freed && !e.recalled && !e.consumed) {
                e.consumed = true;
                table.takeReferenced(e.slot);
                consumed.addLast(e);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Frees the oldest consumed chunk no one has read since or holds; true when one was freed. Under the lock. */
    private boolean evictConsumed() {
        for (Entry entry; (entry = consumed.pollFirst()) != null; ) {
            entry.consumed = false;
            if (entry.freed || entry.recalled || chunks.get(entry.key) != entry || table.referenced(entry.slot)) {
                continue; // gone, or read again since: the clock's to judge
            }
            if (tryFree(entry)) {
                evictions.increment();
                return true;
            }
            // pinned by a reader: the clock finds it later
        }
        return false;
    }

    /** One CLOCK sweep (at most two passes over the ring); true when it freed a chunk. Under the lock. */
    private boolean evictOne() {
        if (evictConsumed()) {
            return true;
        }
        for (int budget = 2 * clock.size(); budget > 0; budget--) {
            Entry entry = clock.pollFirst();
            if (entry == null) {
                return false;
            }
            if (entry.freed || entry.recalled) {
                continue; // replaced and already freed, or waiting for the mirror
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
