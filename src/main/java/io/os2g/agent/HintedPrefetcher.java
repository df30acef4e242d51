package io.os2g.agent;

import io.os2g.namespace.Node;
import io.os2g.staging.ChunkKey;
import io.os2g.staging.ChunkLayout;
import io.os2g.staging.ExtentIndex;
import io.os2g.staging.StagedChunk;
import io.os2g.staging.StagingView;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Stages files in an order a loader announced: the paths written to {@code /.os2g/prefetch} (ahead
 * of readers) or to {@code /.os2g/warm} (everything, nobody reading yet).
 *
 * <p>Ahead of readers: up to {@code maxInFlight} files are fetched at once, and no more than
 * {@code windowBytes} of staging (whole pages) hold hinted files staged or in flight but not yet opened, so a reader that
 * falls behind stops the prefetching instead of having its next files evicted for ones needed later.
 * A hinted file's chunks stay pinned by the agent from the moment they are staged until the file is
 * opened and its handle released, so no eviction takes them before they are read; the pins are bounded
 * by the window. A file is consumed when opened; one left unopened while readers opened files
 * {@value #SKIP_BEHIND} places further on is taken as skipped, and its pins go. A new list replaces
 * the files not yet staged, and unpins those staged but unread.
 *
 * <p>Warm: the same order and concurrency, with no window (the caller sized the list to the region)
 * and no pins: warmed chunks are evicted by the usual policy when space is needed.
 */
final class HintedPrefetcher implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(HintedPrefetcher.class);

    /** How far behind the readers' latest hinted open a hinted file may be before it counts as skipped. */
    static final int SKIP_BEHIND = 512;
    /**
     * Hinted files waiting their turn, at most: about 100 MiB of heap for keys and ETags. A longer list
     * is cut (counted as dropped, logged once); the Python sampler writes an epoch in windows well below it.
     */
    static final int MAX_QUEUED = 1 << 18;

    enum Mode { AHEAD_OF_READERS, WARM }

    /** One hinted file; guarded by the prefetcher's monitor. */
    private static final class Entry {
        final Node.File file;
        final long position;
        /** Staging bytes the file takes: its chunks rounded up to whole pages. */
        final long footprint;
        final List<StagedChunk> pins = new ArrayList<>();
        boolean staged;
        boolean opened;
        boolean dropped;

        Entry(Node.File file, long position, long footprint) {
            this.file = file;
            this.position = position;
            this.footprint = footprint;
        }
    }

    private final Mode mode;
    private final ChunkFetcher fetcher;
    private final StagingView view;
    private final ChunkLayout layout;
    private final long windowBytes;
    private final int pageSize;
    private final int maxInFlight;

    private final ArrayDeque<Entry> queue = new ArrayDeque<>();
    /** Entries fetched or being fetched and not yet consumed, in hint order. */
    private final ArrayDeque<Entry> ahead = new ArrayDeque<>();
    /** The latest entry of each hinted inode that is not consumed yet. */
    private final Map<Long, Entry> byInode = new HashMap<>();
    /** Opened entries whose pins wait for the file's handle to be released. */
    private final Map<Long, Entry> openedByInode = new HashMap<>();
    /** Requests to run {@link #drain()}; one thread drains at a time, so completions that arrive
     *  synchronously (files already staged) loop instead of recursing. */
    private final AtomicInteger pumpRequests = new AtomicInteger();
    private long nextPosition;
    private long aheadBytes;
    private int inFlight;
    private boolean closed;

    private final LongAdder hinted = new LongAdder();
    private final LongAdder staged = new LongAdder();
    private final LongAdder stagedBytes = new LongAdder();
    private final LongAdder stagedBeforeOpen = new LongAdder();
    private final LongAdder openedBeforeStaged = new LongAdder();
    private final LongAdder skipped = new LongAdder();
    private final LongAdder failed = new LongAdder();
    private final LongAdder dropped = new LongAdder();
    private boolean droppedReported;

    HintedPrefetcher(Mode mode, ChunkFetcher fetcher, ExtentIndex index, ChunkLayout layout, long windowBytes, int maxInFlight) {
        this.mode = mode;
        this.fetcher = fetcher;
        this.view = index.view();
        this.layout = layout;
        this.windowBytes = windowBytes;
        this.pageSize = index.pageSize();
        this.maxInFlight = Math.max(1, maxInFlight);
    }

    /** Adds {@code files} at the end of the order; with {@code replace}, drops what was hinted before first. */
    void hint(List<Node.File> files, boolean replace) {
        List<StagedChunk> unpin = new ArrayList<>();
        synchronized (this) {
            if (closed) {
                return;
            }
            if (replace) {
                droppedReported = false;
                queue.clear();
                for (Entry e : ahead) {
                    e.dropped = true;
                    unpin.addAll(e.pins);
                    e.pins.clear();
                }
                ahead.clear();
                aheadBytes = 0;
                byInode.clear();
            }
            for (Node.File file : files) {
                if (queue.size() >= MAX_QUEUED) {
                    dropped.increment();
                    if (!droppedReported) {
                        droppedReported = true;
                        LOG.warn("{} hints: more than {} files waiting; the rest of this list is dropped (write long lists in parts)",
                                mode == Mode.WARM ? "warm" : "prefetch", MAX_QUEUED);
                    }
                    continue;
                }
                Entry entry = new Entry(file, nextPosition++, footprint(file));
                queue.addLast(entry);
                byInode.put(file.inode(), entry);
            }
        }
        hinted.add(files.size());
        unpinAll(unpin);
        pump();
    }

    /** Whether hinted files are waiting or being staged (the directory prefetcher's guesses then stay idle). */
    synchronized boolean active() {
        return !queue.isEmpty() || !ahead.isEmpty();
    }

    /** A reader opened {@code file}: it no longer counts against the window. */
    void onOpen(Node.File file) {
        if (mode != Mode.AHEAD_OF_READERS) {
            return;
        }
        List<StagedChunk> unpin = new ArrayList<>();
        synchronized (this) {
            Entry entry = byInode.get(file.inode());
            if (entry == null || entry.opened || !entry.file.etag().equals(file.etag())) {
                return;
            }
            entry.opened = true;
            byInode.remove(file.inode());
            if (entry.staged) {
                stagedBeforeOpen.increment();
            } else {
                openedBeforeStaged.increment();
            }
            if (ahead.remove(entry)) {
                aheadBytes -= entry.footprint;
            } else {
                queue.remove(entry); // opened before its turn: the open's own read fetches it
            }
            openedByInode.put(file.inode(), entry);
            // readers have moved on past files they left unopened: stop holding those
            while (!ahead.isEmpty() && ahead.peekFirst().position < entry.position - SKIP_BEHIND) {
                Entry behind = ahead.pollFirst();
                behind.dropped = true;
                aheadBytes -= behind.footprint;
                byInode.remove(behind.file.inode(), behind);
                unpin.addAll(behind.pins);
                behind.pins.clear();
                skipped.increment();
            }
        }
        unpinAll(unpin);
        pump();
    }

    /** A handle of {@code file} was released: the pins that kept it staged for its reader go. */
    void onRelease(Node.File file) {
        List<StagedChunk> unpin;
        synchronized (this) {
            Entry entry = openedByInode.remove(file.inode());
            if (entry == null) {
                return;
            }
            unpin = new ArrayList<>(entry.pins);
            entry.pins.clear();
        }
        unpinAll(unpin);
    }

    private void pump() {
        if (pumpRequests.getAndIncrement() != 0) {
            return; // the thread draining now will look again
        }
        int missed = 1;
        do {
            drain();
            missed = pumpRequests.addAndGet(-missed);
        } while (missed != 0);
    }

    /** Starts fetches while the window and the in-flight bound allow. */
    private void drain() {
        while (true) {
            Entry next;
            synchronized (this) {
                next = queue.peekFirst();
                if (closed || next == null || inFlight >= maxInFlight
                        || (mode == Mode.AHEAD_OF_READERS && !ahead.isEmpty() && aheadBytes + next.footprint > windowBytes)) {
                    return;
                }
                queue.pollFirst();
                inFlight++;
                ahead.addLast(next);
                aheadBytes += next.footprint;
            }
            stageWhole(next);
        }
    }

    private void stageWhole(Entry entry) {
        Node.File file = entry.file;
        long chunks = file.size() == 0 ? 0 : layout.index(file.size() - 1) + 1;
        CompletableFuture<?>[] parts = new CompletableFuture<?>[(int) chunks];
        for (int c = 0; c < chunks; c++) {
            parts[c] = fetcher.stageAhead(file, c);
        }
        CompletableFuture.allOf(parts).whenComplete((ok, failure) -> finished(entry, failure == null));
    }

    private void finished(Entry entry, boolean ok) {
        List<StagedChunk> pins = new ArrayList<>();
        if (ok && mode == Mode.AHEAD_OF_READERS) {
            long chunks = entry.file.size() == 0 ? 0 : layout.index(entry.file.size() - 1) + 1;
            for (int c = 0; c < chunks; c++) {
                StagedChunk pin = view.acquire(new ChunkKey(entry.file.inode(), c), entry.file.etag());
                if (pin != null) {
                    pins.add(pin);
                }
            }
        }
        List<StagedChunk> unpin = List.of();
        synchronized (this) {
            inFlight--;
            if (ok) {
                staged.increment();
                stagedBytes.add(entry.file.size());
            } else {
                failed.increment();
            }
            entry.staged = ok;
            boolean keep = ok && mode == Mode.AHEAD_OF_READERS && !entry.dropped && !closed
                    && (!entry.opened || openedByInode.get(entry.file.inode()) == entry);
            if (keep) {
                entry.pins.addAll(pins);
            } else {
                unpin = pins;
            }
            if ((mode == Mode.WARM || !ok) && ahead.remove(entry)) {
                aheadBytes -= entry.footprint;
                byInode.remove(entry.file.inode(), entry);
            }
        }
        unpinAll(unpin);
        pump();
    }

    private long footprint(Node.File file) {
        long bytes = 0;
        for (long c = 0; file.size() > 0 && c <= layout.index(file.size() - 1); c++) {
            long length = layout.length(file.size(), c);
            bytes += (length + pageSize - 1) / pageSize * pageSize;
        }
        return bytes;
    }

    private void unpinAll(List<StagedChunk> pins) {
        for (StagedChunk pin : pins) {
            view.release(pin);
        }
    }

    /** Counters for the stats document. */
    Map<String, Long> counters() {
        Map<String, Long> m = new LinkedHashMap<>();
        m.put("files", hinted.sum());
        m.put("files_staged", staged.sum());
        m.put("bytes_staged", stagedBytes.sum());
        m.put("files_failed", failed.sum());
        m.put("files_dropped", dropped.sum());
        if (mode == Mode.AHEAD_OF_READERS) {
            m.put("staged_before_open", stagedBeforeOpen.sum());
            m.put("opened_before_staged", openedBeforeStaged.sum());
            m.put("skipped", skipped.sum());
        }
        return m;
    }

    /** Stops prefetching and lets go of every pin (before the region is checked and freed). */
    @Override
    public void close() {
        List<StagedChunk> unpin = new ArrayList<>();
        synchronized (this) {
            closed = true;
            queue.clear();
            for (Entry e : ahead) {
                unpin.addAll(e.pins);
                e.pins.clear();
            }
            for (Entry e : openedByInode.values()) {
                unpin.addAll(e.pins);
                e.pins.clear();
            }
            ahead.clear();
            openedByInode.clear();
            byInode.clear();
        }
        unpinAll(unpin);
    }
}
