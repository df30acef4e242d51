package io.os2g.agent;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.os2g.namespace.Directory;
import io.os2g.namespace.Namespace;
import io.os2g.namespace.Node;
import io.os2g.staging.ChunkKey;
import io.os2g.staging.ExtentIndex;
import io.os2g.staging.StagedChunk;
import com.github.benmanes.caffeine.cache.RemovalCause;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.concurrent.atomic.LongAdder;

/**
 * Stages the small files of a directory that a reader is working through, before they are opened.
 *
 * <p>A loader that reads a dataset of small files (an ImageFolder epoch, shuffled or not) opens file
 * after file in the same few directories; each open that misses costs a round trip to the object store,
 * which no readahead within a file can hide. Once a directory has seen two opens of small files, the
 * prefetcher stages its other small files in listing order, keeping at most {@code window} of them
 * staged-but-not-yet-opened per directory, and at most a quarter of the staging region over all
 * directories, so a reader that stops wastes a bounded number of fetches and never crowds out the
 * staging space of other readers; a directory not opened in for a minute gives its share back. A
 * directory's listing comes from the namespace cache (no extra LIST); files larger than one chunk are
 * left to the per-file readahead. A staged file stays pinned by the agent until it is opened (or its
 * directory goes idle): without that, once the region is full of data already read, eviction takes the
 * prefetched files before the readers reach them and the fetches are wasted; the pins stay within the
 * quarter of the region. With a disk cache, the directory's small files are also filled into it in
 * listing order, ahead of the readers (a growing number per open, while the whole directory fits half
 * of what the cache may take): a shuffled epoch over a set larger than memory then reads most files
 * from disk even the first time. Explicit hints (an epoch's order) are better still and take
 * precedence when a loader gives them.
 *
 * <p>Every epoch, not only the first: a directory keeps the files opened in its current pass, and a
 * file opened again after half the directory's worth of opens since its last starts the next pass (an
 * epoch over the dataset again). The listing is walked from its start once more: a file still staged is held
 * (pinned) for the new pass instead of fetched again, one that is not is staged ahead again, so a dataset
 * the region could not keep costs only the files it lost. In a sweep, a new pass in one directory begins
 * one in all of them (the sampler began another epoch), and what is still staged anywhere in the tree is
 * held before anything is fetched.
 *
 * <p>A sweep of a tree: once two sibling directories are being read through (a shuffled sampler over
 * an ImageFolder's class folders), the whole parent is. Its subdirectories are then staged in listing
 * order, directory after directory, with no per-directory window, up to three quarters of the staging
 * region outstanding: a shuffled reader misses only what the region cannot hold ahead of it.
 */
final class DirectoryPrefetcher {

    /** Opens of small files in a directory before it counts as being read through. */
    private static final int OPENS_BEFORE_PREFETCH = 2;
    /** Sibling directories being read through at once that make their parent a sweep. */
    static final int SIBLINGS_FOR_SWEEP = 2;
    /**
     * Bytes between two files of one container that still join them into one GET (a tar member's header
     * and padding, PAX headers with long names): cheaper to read and drop than a second round trip.
     */
    private static final long MAX_GAP = 16 * 1024;
    /**
     * Files a directory may fill into the disk cache per open of it so far: enough to run far ahead of a
     * shuffled epoch within its first few hundred opens, while a reader that opens a handful of files
     * costs a bounded number of GETs.
     */
    private static final int FILL_PER_OPEN = 16;
    /** Directories tracked at once (most recently opened in). */
    private static final int MAX_DIRECTORIES = 1024;
    /** A directory not opened in for this long is no longer being read through. */
    private static final Duration IDLE = Duration.ofMinutes(1);

    private final Namespace namespace;
    private final ChunkFetcher fetcher;
    private final Function<String, TarExpandingStore.Placement> placements;
    private final ExtentIndex index;
    private final long chunkSize;
    private final int window;
    private final long budgetBytes;
    private final long sweepBudgetBytes;
    private final AtomicLong outstandingBytes = new AtomicLong();
    private final LongAdder fillsAsked = new LongAdder();
    private final LongAdder fillsEnded = new LongAdder();
    private final Cache<String, DirectoryState> directories;
    private final Cache<String, Sweep> sweeps;
    private final LongAdder sweepsDetected = new LongAdder();
    private final LongAdder prefetched = new LongAdder();
    private final LongAdder keptStaged = new LongAdder();
    private final LongAdder prefetchedOpened = new LongAdder();
    private final LongAdder prefetchedUnread = new LongAdder();
    private final LongAdder passes = new LongAdder();
    /** Whether the shim has the kernel read whole files in the disk cache itself (FUSE passthrough). */
    private volatile boolean kernelReadsCachedFiles;

    /** Progress through one directory; guarded by its own monitor. */
    private static final class DirectoryState {
        final List<Node.File> smallFiles;
        final Map<Long, Long> outstanding = new HashMap<>(); // inode -> the staging it takes: staged or staging, not yet opened
        final Map<Long, StagedChunk> pins = new HashMap<>(); // inode -> the agent's pin on its staged chunk
        /** Inodes opened in this pass through the directory, with the count of opens here when they were. */
        final Map<Long, Integer> openedThisPass = new HashMap<>();
        /** Whether the directory's small files all fit the disk cache's fill budget (and have a disk cache). */
        final boolean fillable;
        int cursor;
        int fillCursor;
        int filling;
        int opens;
        boolean gone;

        DirectoryState(List<Node.File> smallFiles, boolean fillable) {
            this.smallFiles = smallFiles;
            this.fillable = fillable;
        }
    }

    /** The subdirectories of one parent being read through; a sweep once enough are. Guarded by its monitor. */
    private static final class Sweep {
        final Set<String> readThrough = new HashSet<>();
        /** The parent's subdirectories in listing order, once a sweep; null before. */
        List<String> children;
        /** The same as a set, read without the monitor by opens in them. */
        volatile Set<String> covered;
        /** The first of {@link #children} that may have files left to stage. */
        int cursor;

        boolean covers(String prefix) {
            return covered != null && covered.contains(prefix);
        }
    }

    /** @param placements where a file's bytes lie inside another object (tar members), or null for its own */
    DirectoryPrefetcher(Namespace namespace, ChunkFetcher fetcher, Function<String, TarExpandingStore.Placement> placements,
                        ExtentIndex index, long chunkSize, int window) {
        this.namespace = namespace;
        this.fetcher = fetcher;
        this.placements = placements;
        this.index = index;
        this.chunkSize = chunkSize;
        this.window = window;
        this.budgetBytes = index.capacityBytes() / 4;
        this.sweepBudgetBytes = index.capacityBytes() * 3 / 4;
        this.sweeps = Caffeine.newBuilder().maximumSize(MAX_DIRECTORIES).expireAfterAccess(IDLE).build();
        this.directories = Caffeine.newBuilder()
                .maximumSize(MAX_DIRECTORIES)
                .expireAfterAccess(IDLE)
                .executor(Runnable::run) // pins go when the directory does, not later on another thread
                .removalListener((String prefix, DirectoryState state, RemovalCause cause) -> {
                    if (state != null) {
                        List<StagedChunk> unpin;
                        synchronized (state) {
                            state.gone = true;
                            prefetchedUnread.add(state.outstanding.size());
                            state.outstanding.values().forEach(size -> outstandingBytes.addAndGet(-size));
                            state.outstanding.clear();
                            unpin = List.copyOf(state.pins.values());
                            state.pins.clear();
                        }
                        unpin.forEach(index.view()::release);
                    }
                })
                .build();
    }

    /** Called on every open: counts it, and keeps the directory's window (or its sweep's) staged ahead. */
    void onOpen(Node.File file) {
        if (window <= 0 || file.size() > chunkSize) {
            return;
        }
        String prefix = parentOf(file.key());
        DirectoryState state = directories.get(prefix, this::load);
        if (state == null) {
            return;
        }
        Sweep sweep = prefix.isEmpty() ? null : sweeps.getIfPresent(parentOf(prefix));
        StagedChunk unpin;
        List<Node.File> toStage = List.of();
        boolean began;
        boolean restarted = false;
        boolean staging;
        synchronized (state) { // one block: a top-up in between would stage this file again for its pass
            Long opened = state.outstanding.remove(file.inode());
            if (opened != null) {
                outstandingBytes.addAndGet(-opened);
                prefetchedOpened.increment();
            }
            unpin = state.pins.remove(file.inode());
            Integer before = state.openedThisPass.put(file.inode(), state.opens);
            if (before != null && 2 * (state.opens - before) >= state.smallFiles.size()) {
                // opened again after half the directory since: the reader has started over (an open
                // twice in a row, to look and then to read, is not)
                state.openedThisPass.clear();
                state.openedThisPass.put(file.inode(), state.opens);
                state.cursor = 0;
                passes.increment();
                restarted = true;
            }
            boolean swept = sweep != null && sweep.covers(prefix);
            began = ++state.opens == OPENS_BEFORE_PREFETCH;
            if (began) {
                passes.increment();
            }
            staging = state.opens >= OPENS_BEFORE_PREFETCH || swept;
            if (staging && !swept) {
                toStage = take(state, window, budgetBytes);
            }
        }
        if (unpin != null) {
            index.view().release(unpin); // the reader pins it again to copy
        }
        if (!staging) {
            return;
        }
        if (began && !prefix.isEmpty()) {
            sweep = joinSweep(prefix);
        }
        prefetched.add(toStage.size());
        stageInRuns(state, toStage);
        if (sweep != null && sweep.covers(prefix)) {
            if (restarted) {
                restart(sweep, prefix);
            }
            topUp(sweep, restarted);
        }
        fill(state);
    }

    /**
     * The directory's next files to stage, from its cursor, while it has fewer than {@code maxOutstanding}
     * staged unopened and all directories fewer than {@code budget} bytes; counted as outstanding. Under
     * the state's monitor.
     */
    private List<Node.File> take(DirectoryState state, int maxOutstanding, long budget) {
        List<Node.File> toStage = new ArrayList<>();
        // filled to disk, a file is read by the kernel from there: staging it too would be wasted
        while (!exhausted(state) && state.outstanding.size() < maxOutstanding && outstandingBytes.get() < budget) {
            Node.File next = state.smallFiles.get(state.cursor++);
            if (!state.openedThisPass.containsKey(next.inode()) && !state.outstanding.containsKey(next.inode())
                    && !keep(state, next)) {
                state.outstanding.put(next.inode(), footprint(next));
                outstandingBytes.addAndGet(footprint(next));
                toStage.add(next);
            }
        }
        return toStage;
    }

    /**
     * Holds {@code file} for this pass's reader if it is staged already (a reader or the last pass put it
     * there): pinned and counted as outstanding like a file staged ahead, with no fetch. Under the
     * state's monitor; false when it is not staged.
     */
    private boolean keep(DirectoryState state, Node.File file) {
        StagedChunk pin = index.view().acquire(new ChunkKey(file.inode(), 0), file.etag());
        if (pin == null) {
            return false;
        }
        state.outstanding.put(file.inode(), footprint(file));
        outstandingBytes.addAndGet(footprint(file));
        state.pins.put(file.inode(), pin);
        keptStaged.increment();
        return true;
    }

    /** The staging space a small file takes: its length in whole pages. */
    private long footprint(Node.File file) {
        return (file.size() + index.pageSize() - 1) / index.pageSize() * index.pageSize();
    }

    /**
     * Starts a new pass through every directory of {@code sweep} (one of them began one: the sampler
     * began another epoch) and keeps what is still staged from the last, up to the sweep's budget, before
     * anything is fetched: fetching a file of the new pass while the region is full would only evict
     * another that the pass has not read either.
     */
    private void restart(Sweep sweep, String startedBy) {
        synchronized (sweep) {
            List<DirectoryState> states = new ArrayList<>();
            for (String child : sweep.children) {
                DirectoryState d = directories.get(child, this::load);
                if (d == null) {
                    continue;
                }
                states.add(d);
                if (!child.equals(startedBy)) {
                    synchronized (d) {
                        d.openedThisPass.clear();
                        d.cursor = 0;
                    }
                    passes.increment();
                }
            }
            for (DirectoryState d : states) {
                synchronized (d) {
                    for (Node.File file : d.smallFiles) {
                        if (exhausted(d) || outstandingBytes.get() >= sweepBudgetBytes) {
                            break;
                        }
                        if (!d.openedThisPass.containsKey(file.inode()) && !d.outstanding.containsKey(file.inode())) {
                            keep(d, file);
                        }
                    }
                }
            }
        }
    }

    /** Whether the directory has nothing left to stage in this pass. Under the state's monitor. */
    private boolean exhausted(DirectoryState state) {
        return state.gone || state.cursor >= state.smallFiles.size() || (state.fillable && kernelReadsCachedFiles);
    }

    /**
     * Counts {@code prefix} as read through among its siblings; returns its parent's sweep, detected
     * (its subdirectories listed) when this makes {@link #SIBLINGS_FOR_SWEEP} of them.
     */
    private Sweep joinSweep(String prefix) {
        String parent = parentOf(prefix);
        Sweep sweep = sweeps.get(parent, p -> new Sweep());
        synchronized (sweep) {
            if (sweep.children == null && sweep.readThrough.add(prefix) && sweep.readThrough.size() >= SIBLINGS_FOR_SWEEP) {
                Directory listing = namespace.cachedDirectory(parent);
                List<String> children = new ArrayList<>();
                if (listing != null) {
                    listing.entries().values().forEach(n -> {
                        if (n instanceof Node.Dir d) {
                            children.add(d.prefix());
                        }
                    });
                }
                sweep.readThrough.stream().filter(c -> !children.contains(c)).sorted().forEach(children::add);
                sweep.children = children;
                sweep.covered = Set.copyOf(children);
                sweepsDetected.increment();
            }
        }
        return sweep;
    }

    /**
     * Stages the sweep's directories in listing order, from the first with files left, until three quarters
     * of the region is outstanding (the rest stays for misses and readahead); {@code rewind}: a directory
     * started a new pass, so look from the first again.
     * A directory not listed yet (no reader looked it up) is passed over until it is.
     */
    private void topUp(Sweep sweep, boolean rewind) {
        synchronized (sweep) {
            if (rewind) {
                sweep.cursor = 0;
            }
            boolean allDoneSoFar = true;
            for (int i = sweep.cursor; i < sweep.children.size() && outstandingBytes.get() < sweepBudgetBytes; i++) {
                DirectoryState d = directories.get(sweep.children.get(i), this::load);
                if (d == null) {
                    allDoneSoFar = false;
                    continue;
                }
                List<Node.File> toStage;
                boolean done;
                synchronized (d) {
                    toStage = take(d, Integer.MAX_VALUE, sweepBudgetBytes);
                    done = exhausted(d);
                }
                prefetched.add(toStage.size());
                stageInRuns(d, toStage);
                if (!done) {
                    return; // the budget is spent
                }
                if (allDoneSoFar) {
                    sweep.cursor = i + 1;
                }
            }
        }
    }

    private static String parentOf(String path) {
        String trimmed = path.endsWith("/") ? path.substring(0, path.length() - 1) : path;
        int slash = trimmed.lastIndexOf('/');
        return slash < 0 ? "" : trimmed.substring(0, slash + 1);
    }

    /**
     * Keeps the directory's fill of the disk cache going, in listing order, up to {@link #FILL_PER_OPEN}
     * files per open so far: the staging region holds a window of a directory, the disk cache all of it.
     */
    private void fill(DirectoryState state) {
        List<Node.File> next = new ArrayList<>();
        synchronized (state) {
            if (state.gone || !state.fillable) {
                return;
            }
            long allowed = (long) state.opens * FILL_PER_OPEN;
            while (state.filling < ChunkFetcher.FILLS_IN_FLIGHT && state.fillCursor < state.smallFiles.size()
                    && state.fillCursor < allowed) {
                next.add(state.smallFiles.get(state.fillCursor++));
                state.filling++;
            }
        }
        for (Node.File file : next) {
            fillsAsked.increment();
            fetcher.fill(file).whenComplete((done, failed) -> {
                synchronized (state) {
                    state.filling--;
                }
                fill(state); // asks for the next before this one counts as ended
                fillsEnded.increment();
            });
        }
    }

    /**
     * Whether every fill asked for has ended (filled, found there already, or failed) and none that
     * ended asked for another: the directory fills are at rest until the next open.
     */
    boolean fillsAtRest() {
        return fillsEnded.sum() == fillsAsked.sum(); // ended first: an ask made meanwhile keeps them apart
    }

    /** Fills of the disk cache asked for so far, one per file in listing order. */
    long fillsAsked() {
        return fillsAsked.sum();
    }

    /** Once {@code file} is staged, pins it for its reader, unless it was opened or its directory went meanwhile. */
    private void pinWhenStaged(DirectoryState state, Node.File file, CompletableFuture<Void> staged) {
        staged.thenRun(() -> {
            StagedChunk pin = index.view().acquire(new ChunkKey(file.inode(), 0), file.etag());
            if (pin == null) {
                return;
            }
            boolean kept;
            synchronized (state) {
                kept = !state.gone && state.outstanding.containsKey(file.inode()) && !state.pins.containsKey(file.inode());
                if (kept) {
                    state.pins.put(file.inode(), pin);
                }
            }
            if (!kept) {
                index.view().release(pin);
            }
        });
    }

    /** The shim has the kernel read whole files in the disk cache itself: fill those, do not stage them. */
    void kernelReadsCachedFiles() {
        if (!kernelReadsCachedFiles) { // asked on every open: a read, not a volatile write, once set
            kernelReadsCachedFiles = true;
        }
    }

    /** Unpins everything (the agent is closing). */
    void close() {
        directories.invalidateAll();
    }

    /**
     * Stages {@code files} (in listing order), those lying one after another in one container (the members
     * of a tar written in order) as runs of at most a chunk, each run with one GET.
     */
    private void stageInRuns(DirectoryState state, List<Node.File> files) {
        List<Node.File> run = new ArrayList<>();
        List<Long> offsets = new ArrayList<>();
        TarExpandingStore.Placement first = null;
        for (Node.File file : files) {
            TarExpandingStore.Placement at = placements.apply(file.key());
            if (!run.isEmpty()) {
                Node.File last = run.getLast();
                long lastEnd = offsets.getLast() + last.size();
                boolean joins = at != null && first != null && at.container().equals(first.container())
                        && file.etag().equals(last.etag()) && at.offset() >= lastEnd && at.offset() - lastEnd <= MAX_GAP
                        && at.offset() + file.size() - first.offset() <= chunkSize;
                if (!joins) {
                    flush(state, first, run, offsets);
                    run.clear();
                    offsets.clear();
                }
            }
            if (run.isEmpty()) {
                first = at;
            }
            run.add(file);
            offsets.add(at == null ? 0L : at.offset());
        }
        if (!run.isEmpty()) {
            flush(state, first, run, offsets);
        }
    }

    private void flush(DirectoryState state, TarExpandingStore.Placement first, List<Node.File> run, List<Long> offsets) {
        if (run.size() == 1 || first == null) {
            run.forEach(file -> pinWhenStaged(state, file, fetcher.stageAhead(file, 0)));
        } else {
            List<CompletableFuture<Void>> staged = fetcher.stageRun(first.container(), List.copyOf(run), List.copyOf(offsets));
            for (int i = 0; i < run.size(); i++) {
                pinWhenStaged(state, run.get(i), staged.get(i));
            }
        }
    }

    private DirectoryState load(String prefix) {
        Directory directory = namespace.cachedDirectory(prefix);
        if (directory == null) {
            return null;
        }
        List<Node.File> small = new ArrayList<>();
        long bytes = 0;
        boolean ownObjects = true;
        for (Node node : directory.entries().values()) {
            if (node instanceof Node.File f && f.size() > 0 && f.size() <= chunkSize) {
                small.add(f);
                bytes += f.size();
                ownObjects &= placements.apply(f.key()) == null; // tar members: staged in runs, not filled
            }
        }
        boolean fillable = fetcher.fillsDisk() && ownObjects && bytes <= fetcher.fillBudget();
        return new DirectoryState(small, fillable);
    }

    long prefetchedFiles() {
        return prefetched.sum();
    }

    /**
     * What the directory prefetcher did: passes through directories begun (a first pass, and each epoch
     * over one again), sweeps of a tree detected, files staged ahead, of those opened after, and dropped
     * unopened (their directory went idle).
     */
    Map<String, Long> counters() {
        Map<String, Long> m = new LinkedHashMap<>();
        m.put("passes", passes.sum());
        m.put("sweeps", sweepsDetected.sum());
        m.put("files_staged", prefetched.sum());
        m.put("kept_staged", keptStaged.sum());
        m.put("staged_then_opened", prefetchedOpened.sum());
        m.put("dropped_unopened", prefetchedUnread.sum());
        return m;
    }
}
