package io.os2g.agent;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Ticker;
import io.os2g.Errno;
import io.os2g.namespace.Node;
import io.os2g.staging.ChunkKey;
import io.os2g.staging.ChunkLayout;
import io.os2g.staging.ExtentIndex;
import io.os2g.staging.Reservation;
import io.os2g.diskcache.BlockKey;
import io.os2g.diskcache.DiskCache;
import io.os2g.sharedcache.SharedCache;
import io.os2g.staging.StagedChunk;
import io.os2g.staging.StagingView;
import io.os2g.store.ObjectStore;
import io.os2g.store.StoreException;
import java.io.EOFException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import org.apache.commons.io.input.BoundedInputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Stages chunks: one ranged GET per chunk, with If-Match, into reserved pages; one GET per chunk
 * however many readers ask for it at once.
 *
 * <p>A failed fetch is remembered for {@link #FAILURE_MEMORY}: a request for that chunk within it
 * fails at once with the same error. The kernel asks again for a page whose readahead failed, and
 * without this the reader would wait out every retry and deadline twice before it saw EIO.
 */
final class ChunkFetcher implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ChunkFetcher.class);

    /** A chunk of one object version: a failure of an old version says nothing about the new one. */
    private record Version(ChunkKey key, String etag) {
    }

    static final Duration FAILURE_MEMORY = Duration.ofSeconds(1);

    private final ObjectStore store;
    private final ExtentIndex index;
    private final ChunkLayout layout;
    private final FetchQueue queue;
    private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
    private final ConcurrentHashMap<ChunkKey, FetchInFlight> inFlight = new ConcurrentHashMap<>();
    private final LongAdder fetched = new LongAdder();
    private final LongAdder fetchedBytes = new LongAdder();
    private final LongAdder failures = new LongAdder();
    /** How long a whole chunk takes from the store, moving average (0 until one did); for readahead windows. */
    private volatile long chunkFetchNanos;
    private final Cache<Version, Throwable> recentFailures;

    /** The disk tier below staging, or null; the cluster's tier below it (its own counters), or null; the store and bucket their keys name. */
    private final DiskCache cache;
    private final SharedCache shared;
    private final String cacheScope;
    private final LongAdder fromDisk = new LongAdder();
    /** GETs of whole small files straight into the disk cache, ahead of their readers ({@link #fill}). */
    private final Semaphore fillSlots = new Semaphore(FILLS_IN_FLIGHT);
    private final ConcurrentHashMap<ChunkKey, CompletableFuture<Void>> fills = new ConcurrentHashMap<>();
    private final LongAdder filled = new LongAdder();

    /**
     * Fills in flight at once: enough to keep ahead of a loader's reads at the store's latency, few
     * enough to leave the readers' own fetches (and this machine's cores) most of the room.
     */
    static final int FILLS_IN_FLIGHT = 8;

    /** @param clock what {@link #FAILURE_MEMORY} is measured by (tests move it on) */
    ChunkFetcher(ObjectStore store, ExtentIndex index, ChunkLayout layout, int maxInFlight, DiskCache cache, SharedCache shared,
                 String cacheScope, Ticker clock) {
        this.recentFailures = Caffeine.newBuilder().expireAfterWrite(FAILURE_MEMORY).maximumSize(4096).ticker(clock).build();
        this.store = store;
        this.index = index;
        this.layout = layout;
        this.queue = new FetchQueue(executor, maxInFlight);
        this.cache = cache;
        this.shared = shared;
        this.cacheScope = cacheScope;
    }

    /** Completes when chunk {@code chunk} of {@code file} is staged, or with the fetch's failure. */
    CompletableFuture<Void> stage(Node.File file, long chunk) {
        return stage(file, chunk, Long.MAX_VALUE, false);
    }

    /**
     * As {@link #stage(Node.File, long)}, for a chunk staged ahead of its reader: its fetch waits while
     * readers' fetches do, until a reader asks for the chunk.
     */
    CompletableFuture<Void> stageAhead(Node.File file, long chunk) {
        return stage(file, chunk, Long.MAX_VALUE, true);
    }

    /**
     * Stages chunk {@code chunk} of {@code file}; completes as soon as its first {@code needed} bytes
     * can be read from staging (a chunk fetched from the store is readable as its body arrives), or
     * with the fetch's failure.
     */
    CompletableFuture<Void> stage(Node.File file, long chunk, long needed) {
        return stage(file, chunk, needed, false);
    }

    private CompletableFuture<Void> stage(Node.File file, long chunk, long needed, boolean ahead) {
        ChunkKey key = new ChunkKey(file.inode(), chunk);
        if (index.view().contains(key, file.etag())) {
            return CompletableFuture.completedFuture(null);
        }
        Throwable failed = recentFailures.getIfPresent(new Version(key, file.etag()));
        if (failed != null) {
            return CompletableFuture.failedFuture(failed);
        }
        CompletableFuture<Void> filling = fills.get(key);
        if (filling != null) { // being fetched into the disk cache: staged from there once it is
            return filling.thenCompose(done -> stage(file, chunk, needed, ahead));
        }
        FetchInFlight mine = new FetchInFlight();
        FetchInFlight running = inFlight.putIfAbsent(key, mine);
        if (running != null) {
            if (!ahead) {
                running.wanted();
            }
            return running.until(needed);
        }
        submit(List.of(mine), () -> fetch(file, key, mine), e -> {
            inFlight.remove(key, mine);
            mine.finish(new AgentException(Errno.EIO, "agent is shutting down", e));
        }, ahead);
        return mine.until(needed);
    }

    /** One small file of a run: staged whole, its bytes at {@code offset} in the run's container. */
    private record RunMember(Node.File file, ChunkKey key, long offset, FetchInFlight done) {
    }

    /**
     * Stages small files (one chunk each) whose bytes lie in order in one object, {@code container}, at
     * {@code offsets} (members of a tar, one after another) with one GET spanning them all: the bytes
     * between members (their headers) are read and dropped. Files already staged or in flight are left
     * out of the GET; the rest complete together. Returns, for each file, when it is staged.
     */
    List<CompletableFuture<Void>> stageRun(String container, List<Node.File> files, List<Long> offsets) {
        List<RunMember> run = new ArrayList<>(files.size());
        List<CompletableFuture<Void>> staged = new ArrayList<>(files.size());
        for (int i = 0; i < files.size(); i++) {
            Node.File file = files.get(i);
            ChunkKey key = new ChunkKey(file.inode(), 0);
            if (index.view().contains(key, file.etag()) || recentFailures.getIfPresent(new Version(key, file.etag())) != null) {
                staged.add(stage(file, 0)); // staged: done; failed lately: that failure
                continue;
            }
            FetchInFlight mine = new FetchInFlight();
            FetchInFlight running = inFlight.putIfAbsent(key, mine);
            if (running == null) {
                run.add(new RunMember(file, key, offsets.get(i), mine));
                staged.add(mine.done());
            } else {
                staged.add(running.done());
            }
        }
        if (!run.isEmpty()) {
            submit(run.stream().map(RunMember::done).toList(), () -> fetchRun(container, run),
                    e -> finish(run, new AgentException(Errno.EIO, "agent is shutting down", e)), true);
        }
        return staged;
    }

    /** Queues a fetch that stages {@code fetches}, a reader's or ahead of one. */
    private void submit(List<FetchInFlight> fetches, Runnable fetch, Consumer<RejectedExecutionException> abandoned, boolean ahead) {
        FetchQueue.Ticket ticket = queue.submit(fetch, abandoned, ahead);
        fetches.forEach(f -> f.queuedAs(ticket));
    }

    private void fetchRun(String container, List<RunMember> run) {
        List<Reservation> reservations = new ArrayList<>(run.size());
        List<RunMember> fromTier = new ArrayList<>();
        try {
            try {
                List<RunMember> fromOrigin = new ArrayList<>(run.size());
                long bytes = 0;
                for (RunMember m : run) {
                    Reservation r = index.reserve((int) m.file().size());
                    reservations.add(r);
                    // the shared tier first, member by member: what it holds is left out of the origin's GET
                    if (shared != null && shared.read(memberBlock(m), r::fill)) {
                        r.publish(m.key(), m.file().etag());
                        reservations.removeLast();
                        fromTier.add(m);
                    } else {
                        fromOrigin.add(m);
                        bytes += m.file().size();
                    }
                }
                if (!fromOrigin.isEmpty()) {
                    long start = fromOrigin.getFirst().offset();
                    long end = fromOrigin.getLast().offset() + fromOrigin.getLast().file().size();
                    store.get(container, start, end - start, fromOrigin.getFirst().file().etag(), body -> {
                        long position = start;
                        for (int i = 0; i < fromOrigin.size(); i++) {
                            body.skipNBytes(fromOrigin.get(i).offset() - position);
                            reservations.get(i).fill(BoundedInputStream.builder().setInputStream(body)
                                    .setMaxCount(fromOrigin.get(i).file().size()).setPropagateClose(false).get());
                            position = fromOrigin.get(i).offset() + fromOrigin.get(i).file().size();
                        }
                    });
                    for (int i = 0; i < fromOrigin.size(); i++) {
                        reservations.get(i).publish(fromOrigin.get(i).key(), fromOrigin.get(i).file().etag());
                    }
                    reservations.clear();
                    fetched.add(fromOrigin.size());
                    fetchedBytes.add(bytes);
                    if (shared != null) {
                        for (RunMember m : fromOrigin) {
                            admitTo(shared::admit, memberBlock(m), m.key(), m.file().etag());
                        }
                    }
                }
            } finally {
                run.getFirst().done().releaseSlot();
            }
            finish(run, null);
        } catch (Throwable t) {
            reservations.forEach(Reservation::cancel);
            failures.increment();
            if (t instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            LOG.debug("fetch of {} files of {} failed: {}", run.size(), container, t.toString());
            // not remembered as failures: a reader that asks again fetches its own file alone
            finish(fromTier, null);
            List<RunMember> rest = new ArrayList<>(run);
            rest.removeAll(fromTier);
            finish(rest, t);
        }
    }

    /** A member's block: the whole of it, under its own key (the view's), not its container's. */
    private BlockKey memberBlock(RunMember m) {
        return new BlockKey(cacheScope, m.file().key(), m.file().etag(), 0, m.file().size());
    }

    private void finish(List<RunMember> run, Throwable failure) {
        for (RunMember m : run) {
            inFlight.remove(m.key(), m.done());
            m.done().finish(failure);
        }
    }

    private void fetch(Node.File file, ChunkKey key, FetchInFlight done) {
        Reservation reservation = null;
        try {
            try {
                // another reader may have staged it while this one waited for a slot
                if (!index.view().contains(key, file.etag())) {
                    int length = layout.length(file.size(), key.index());
                    reservation = index.reserve(length);
                    Reservation target = reservation;
                    // tiers: the disk cache, the shared tier, then the store; each tier keeps what the ones below gave
                    BlockKey block = cache == null && shared == null ? null
                            : new BlockKey(cacheScope, file.key(), file.etag(), layout.start(key.index()), length);
                    boolean onDisk = cache != null && cache.read(block, target::fill);
                    boolean inShared = !onDisk && shared != null && shared.read(block, target::fill);
                    if (!onDisk && !inShared) {
                        // readable as the body arrives; a disk block or a decoded view is not: its checksum is known at its end
                        boolean decoded = store.decodes(file.key());
                        if (!decoded) {
                            target.publishEarly(key, file.etag(), done::readable);
                        }
                        long started = System.nanoTime();
                        store.get(file.key(), layout.start(key.index()), length, file.etag(), target::fill);
                        if (length == layout.chunkSize() && !decoded) { // the store's time, not a decoder's
                            timed(System.nanoTime() - started);
                        }
                    }
                    if (onDisk) {
                        fromDisk.increment();
                    } else if (!inShared) {
                        fetched.increment();
                        fetchedBytes.add(length);
                    }
                    target.publish(key, file.etag());
                    reservation = null;
                    if (!onDisk && cache != null) {
                        admitTo(cache::admit, block, key, file.etag());
                    }
                    if (!onDisk && !inShared && shared != null) {
                        admitTo(shared::admit, block, key, file.etag());
                    }
                }
            } finally {
                done.releaseSlot();
            }
            inFlight.remove(key, done);
            done.finish(null);
        } catch (Throwable thrown) {
            Throwable t = thrown;
            if (t instanceof StoreException se && se.kind() == StoreException.Kind.NOT_FOUND) {
                // the file was open, so it existed: deleted since, like a changed object, is EIO
                t = new AgentException(Errno.EIO, "deleted since it was opened: " + file.key(), se);
            }
            if (reservation != null) {
                reservation.cancel();
            }
            failures.increment();
            if (t instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            LOG.debug("fetch of {} chunk {} failed: {}", file.key(), key.index(), t.toString());
            recentFailures.put(new Version(key, file.etag()), t);
            inFlight.remove(key, done);
            done.finish(t);
        }
    }

    /** Adds one whole chunk's fetch time to the average (an eighth of its weight; a lost race loses a sample). */
    private void timed(long nanos) {
        long before = chunkFetchNanos;
        chunkFetchNanos = before == 0 ? nanos : before + (nanos - before) / 8;
    }

    /** How long a whole chunk takes to fetch from the store lately; 0 when no chunk has been fetched yet. */
    long chunkFetchNanos() {
        return chunkFetchNanos;
    }

    /** Whether this fetcher keeps files in a disk cache, so that {@link #fill} can put them there. */
    boolean fillsDisk() {
        return cache != null;
    }

    /** What a directory may fill into the disk cache ({@link DiskCache#fillBudget}); 0 without one. */
    long fillBudget() {
        return cache == null ? 0 : cache.fillBudget();
    }

    /**
     * Fetches the whole of small {@code file} (one chunk) into the disk cache, not into staging, unless
     * it is there, staged or being fetched already: a directory being read through in an order the
     * staging region cannot hold (a shuffled epoch of a set larger than memory) is then read from disk.
     * Completes when done; a fill that fails is only a miss for the reader later.
     */
    CompletableFuture<Void> fill(Node.File file) {
        ChunkKey key = new ChunkKey(file.inode(), 0);
        BlockKey block = new BlockKey(cacheScope, file.key(), file.etag(), 0, file.size());
        CompletableFuture<Void> done = new CompletableFuture<>();
        if (fills.putIfAbsent(key, done) != null) {
            return CompletableFuture.completedFuture(null);
        }
        try {
            executor.execute(() -> {
                try {
                    fillSlots.acquire();
                    try {
                        if (!index.view().contains(key, file.etag()) && !inFlight.containsKey(key) && !cache.contains(block)) {
                            byte[] bytes = new byte[(int) file.size()];
                            ObjectStore.BodyReader whole = body -> {
                                if (body.readNBytes(bytes, 0, bytes.length) != bytes.length) {
                                    throw new EOFException("body ended early: " + file.key());
                                }
                            };
                            if (shared == null || !shared.read(block, whole::read)) {
                                store.get(file.key(), 0, file.size(), file.etag(), whole);
                                fetched.increment();
                                fetchedBytes.add(bytes.length);
                                if (shared != null) {
                                    shared.admit(block, target -> {
                                        target.put(bytes);
                                        return true;
                                    });
                                }
                            }
                            filled.increment();
                            cache.put(block, ByteBuffer.wrap(bytes)); // on disk before a waiting reader looks
                        }
                    } finally {
                        fillSlots.release();
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } catch (Exception e) {
                    failures.increment();
                    LOG.debug("fill of {} into the disk cache failed: {}", file.key(), e.toString());
                }
                fills.remove(key, done);
                done.complete(null);
            });
        } catch (RejectedExecutionException e) {
            fills.remove(key, done);
            done.complete(null); // shutting down
        }
        return done;
    }

    long filledFiles() {
        return filled.sum();
    }

    /**
     * Hands a chunk just staged to a tier's writer ({@code tier}: the disk cache's or the shared tier's),
     * pinned until written: unpinned, a small region could evict it before the writer's turn and the
     * block would never be written. The pins are bounded by the writer's queue.
     */
    private void admitTo(java.util.function.BiConsumer<BlockKey, DiskCache.BlockSource> tier, BlockKey block, ChunkKey key, String etag) {
        StagingView view = index.view();
        StagedChunk chunk = view.acquire(key, etag);
        if (chunk == null) {
            return; // replaced or evicted already
        }
        java.util.concurrent.atomic.AtomicBoolean released = new java.util.concurrent.atomic.AtomicBoolean();
        tier.accept(block, new DiskCache.BlockSource() {
            @Override
            public boolean copyTo(ByteBuffer target) {
                view.copyOut(chunk, 0, java.lang.foreign.MemorySegment.ofBuffer(target), 0, target.remaining());
                return true;
            }

            @Override
            public void release() {
                if (released.compareAndSet(false, true)) {
                    view.release(chunk);
                }
            }
        });
    }

    long chunksFromDisk() {
        return fromDisk.sum();
    }

    /** The shared tier, or null. */
    SharedCache sharedCache() {
        return shared;
    }

    long fetchedChunks() {
        return fetched.sum();
    }

    long fetchedBytes() {
        return fetchedBytes.sum();
    }

    long failedFetches() {
        return failures.sum();
    }

    /** Interrupts the fetches in flight and waits (a little) for them to give their pages back. */
    @Override
    public void close() {
        queue.close();
        executor.shutdownNow();
        try {
            if (!executor.awaitTermination(5, TimeUnit.SECONDS)) {
                LOG.warn("chunk fetches still running 5 s after the agent closed");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
