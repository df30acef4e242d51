package io.os2g.agent;

import com.github.benmanes.caffeine.cache.Ticker;
import io.os2g.CachedFile;
import io.os2g.Errno;
import io.os2g.diskcache.BlockKey;
import io.os2g.diskcache.DiskCache;
import io.os2g.sharedcache.SharedCache;
import io.os2g.namespace.Directory;
import io.os2g.namespace.Namespace;
import io.os2g.namespace.Node;
import io.os2g.staging.ChunkKey;
import io.os2g.staging.ChunkLayout;
import io.os2g.staging.ExtentIndex;
import io.os2g.store.Listing;
import io.os2g.store.ObjectStore;
import io.os2g.store.ObjectSummary;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Serves the shim's requests: open a file version, stage a byte range (and what the handle's
 * readahead window says comes next), release.
 */
public final class Agent implements AutoCloseable {

    private final AgentConfig config;
    private final ChunkLayout layout;
    private final ChunkFetcher fetcher;
    private final ExtentIndex index;
    private final DirectoryPrefetcher prefetcher;
    private final HintedPrefetcher hints;
    private final HintedPrefetcher warm;
    private final Namespace namespace;
    private final ObjectStore objects;
    private final DiskCache cache;
    private final String cacheScope;
    private final ConcurrentHashMap<Long, OpenFile> handles = new ConcurrentHashMap<>();
    private final AtomicLong nextHandle = new AtomicLong(1);
    /**
     * The window of a file the store decodes (a decompressed view): its decoder goes in order, and a
     * chunk asked for further ahead than it decodes in its order wait (200 ms) would skip ahead, then
     * make the chunks before it restart the decode from the start.
     */
    static final long DECODED_READAHEAD = 64L << 20;

    /** One handle's window at most: the configured cap, and a quarter of the staging region (room for others). */
    private final long maxReadahead;

    private record OpenFile(Node.File file, ReadaheadWindow window) {
    }

    /**
     * @param namespace where the directory prefetcher finds a directory's other files (cached
     *     listings only)
     */
    public Agent(ObjectStore store, ExtentIndex index, AgentConfig config, Namespace namespace) {
        this(store, index, config, namespace, null, null);
    }

    /**
     * @param cache the disk tier below staging (null for none), shared with other agents and processes
     * @param cacheScope the store and bucket the cache's keys name (endpoint and bucket)
     */
    public Agent(ObjectStore store, ExtentIndex index, AgentConfig config, Namespace namespace, DiskCache cache, String cacheScope) {
        this(store, index, config, namespace, cache, null, cacheScope);
    }

    /** @param shared the cluster's tier below the disk cache (null for none), shared with other nodes */
    public Agent(ObjectStore store, ExtentIndex index, AgentConfig config, Namespace namespace, DiskCache cache, SharedCache shared,
                 String cacheScope) {
        this(store, index, config, namespace, cache, shared, cacheScope, Ticker.systemTicker());
    }

    /** @param clock what time-bound memories (a failed fetch's) are measured by; tests move it on */
    Agent(ObjectStore store, ExtentIndex index, AgentConfig config, Namespace namespace, DiskCache cache, SharedCache shared,
          String cacheScope, Ticker clock) {
        this.config = config;
        this.layout = new ChunkLayout(config.chunkSize());
        this.cache = cache;
        this.cacheScope = cacheScope;
        this.fetcher = new ChunkFetcher(store, index, layout, config.maxInFlight(), cache, shared, cacheScope, clock);
        this.index = index;
        this.maxReadahead = Math.max(config.initialReadahead(), Math.min(config.maxReadahead(), index.capacityBytes() / 4));
        this.prefetcher = new DirectoryPrefetcher(namespace, fetcher, placements(store),
                index, config.chunkSize(), config.directoryPrefetch());
        // half the region ahead of the readers: the other half stays for their misses and for readahead
        this.hints = new HintedPrefetcher(HintedPrefetcher.Mode.AHEAD_OF_READERS, fetcher, index, layout,
                index.capacityBytes() / 2, config.maxInFlight());
        this.warm = new HintedPrefetcher(HintedPrefetcher.Mode.WARM, fetcher, index, layout, Long.MAX_VALUE, config.maxInFlight());
        this.namespace = namespace;
        this.objects = store;
    }

    /** Where a file's bytes lie inside another object: tar members, when the store expands tars. */
    private static java.util.function.Function<String, TarExpandingStore.Placement> placements(ObjectStore store) {
        ObjectStore below = store instanceof DecompressedStore decompressed ? decompressed.inner() : store;
        if (below instanceof TarExpandingStore tars) {
            return tars::placement;
        }
        return key -> null;
    }

    /**
     * A fresh listing of the directory at {@code prefix}, cleaned by the namespace's rules (invalid
     * names and hidden keys left out), for a shim in another process to build its directory from.
     */
    public Listing listing(String prefix) {
        inScope(prefix);
        Directory directory = namespace.relist(prefix);
        List<ObjectSummary> objects = new ArrayList<>();
        List<String> prefixes = new ArrayList<>();
        for (Node node : directory.entries().values()) {
            switch (node) {
                case Node.File f -> objects.add(new ObjectSummary(f.key(), f.size(), f.etag(), f.mtimeMillis()));
                case Node.Dir d -> prefixes.add(d.prefix());
            }
        }
        return new Listing(prefix, objects, prefixes);
    }

    public ChunkLayout layout() {
        return layout;
    }

    /** Opens object {@code key} at the version {@code etag} the shim saw in its listing; returns the handle. */
    public long open(long inode, String key, String etag, long size) {
        return open(new Node.File(inode, key, size, etag, 0));
    }

    /**
     * Opens a file version under a handle number the caller chose (a shim in another process numbers
     * its own handles, so an open needs no answer); a number already open is replaced.
     */
    public void open(long handle, long inode, String key, String etag, long size) {
        inScope(key);
        open(handle, new Node.File(inode, key, size, etag, 0));
    }

    long open(Node.File file) {
        long handle = nextHandle.getAndIncrement();
        open(handle, file);
        return handle;
    }

    private void open(long handle, Node.File file) {
        long max = objects.decodes(file.key()) ? Math.min(maxReadahead, DECODED_READAHEAD) : maxReadahead;
        OpenFile replaced = handles.put(handle, new OpenFile(file,
                new ReadaheadWindow(Math.min(config.initialReadahead(), max), max, config.chunkSize())));
        if (replaced != null) {
            hints.onRelease(replaced.file());
        }
        hints.onOpen(file);
        if (!hints.active()) {
            prefetcher.onOpen(file); // a loader's announced order beats guessing from the directory
        }
    }

    /**
     * Stages {@code files} in this order: ahead of the readers ({@code /.os2g/prefetch}) or all of them
     * ({@code warm}, {@code /.os2g/warm}); {@code replace} drops the files hinted before that are not read yet.
     */
    public void prefetch(List<Node.File> files, boolean replace, boolean warm) {
        String root = namespace.root().prefix();
        (warm ? this.warm : hints).hint(files.stream().filter(f -> f.key().startsWith(root)).toList(), replace);
    }

    /** A key or prefix a shim names must lie under the mounted prefix: an agent reads nothing else for it. */
    private void inScope(String key) {
        String root = namespace.root().prefix();
        if (!key.startsWith(root)) {
            throw new AgentException(Errno.EACCES, "key " + key + " is outside the mounted prefix " + root, null);
        }
    }

    /**
     * Stages the chunks of {@code [offset, offset + length)} and, without waiting for them, those of
     * the handle's readahead window. The future completes when the requested range can be read from
     * staging (the rest of its last chunk may still be arriving).
     */
    public CompletableFuture<Void> stage(long handle, long offset, long length) {
        OpenFile open = handles.get(handle);
        if (open == null) {
            return CompletableFuture.failedFuture(new AgentException(Errno.EBADF, "unknown handle " + handle, null));
        }
        Node.File file = open.file();
        long end = Math.min(file.size(), offset + length);
        if (offset >= end) {
            return CompletableFuture.completedFuture(null);
        }
        long aheadEnd;
        long runStart;
        synchronized (open) {
            aheadEnd = Math.min(file.size(), open.window().onRead(offset, end - offset, System.nanoTime(), fetcher.chunkFetchNanos()));
            runStart = open.window().runStart();
        }
        long first = layout.index(offset);
        long last = layout.index(end - 1);
        // two chunks behind a sequential reader: read (the kernel's readahead is out of order by less)
        if (first >= 2 && layout.start(first - 2) >= runStart) {
            index.consumed(new ChunkKey(file.inode(), first - 2));
        }
        CompletableFuture<Void> requested;
        // each chunk only as far as the range reaches into it: the last one may still be arriving
        if (first == last) {
            requested = fetcher.stage(file, first, end - layout.start(first));
        } else {
            CompletableFuture<?>[] parts = new CompletableFuture<?>[(int) (last - first + 1)];
            for (long c = first; c <= last; c++) {
                parts[(int) (c - first)] = fetcher.stage(file, c, Math.min(end, layout.start(c + 1)) - layout.start(c));
            }
            requested = CompletableFuture.allOf(parts);
        }
        for (long c = last + 1; c <= layout.index(aheadEnd - 1); c++) {
            fetcher.stage(file, c);
        }
        return requested;
    }

    /** The file version open under {@code handle}, or null. */
    public Node.File file(long handle) {
        OpenFile open = handles.get(handle);
        return open == null ? null : open.file();
    }

    public void release(long handle) {
        OpenFile open = handles.remove(handle);
        if (open != null) {
            hints.onRelease(open.file());
        }
    }

    /**
     * The disk cache's file that would hold the whole of object version {@code key}/{@code etag} (one
     * block: a file no larger than a chunk), for the kernel to read itself (FUSE passthrough) once
     * verified; null when there is no cache or the file is larger.
     */
    public CachedFile cachedFile(String key, String etag, long size) {
        if (cache == null || size <= 0 || size > config.chunkSize()) {
            return null;
        }
        prefetcher.kernelReadsCachedFiles(); // only a shim whose kernel reads them asks
        return cache.cachedFile(new BlockKey(cacheScope, key, etag, 0, size));
    }

    /** The disk tier below staging, or null. */
    public DiskCache diskCache() {
        return cache;
    }

    /** Chunks staged from the disk cache rather than the store. */
    public long chunksFromDisk() {
        return fetcher.chunksFromDisk();
    }

    /** The cluster's tier below the disk cache, or null. */
    public SharedCache sharedCache() {
        return fetcher.sharedCache();
    }

    public long fetchedChunks() {
        return fetcher.fetchedChunks();
    }

    public long fetchedBytes() {
        return fetcher.fetchedBytes();
    }

    /** Small files fetched into the disk cache ahead of their open, for the directory they are in. */
    /** Whether the directory fills of the disk cache are at rest: see {@link DirectoryPrefetcher#fillsAtRest}. */
    boolean fillsAtRest() {
        return prefetcher.fillsAtRest();
    }

    /** Directory fills of the disk cache asked for so far. */
    long fillsAsked() {
        return prefetcher.fillsAsked();
    }

    public long filledFiles() {
        return fetcher.filledFiles();
    }

    /** Small files staged ahead of their open by the directory prefetcher. */
    public long prefetchedFiles() {
        return prefetcher.prefetchedFiles();
    }

    /** The directory prefetcher's passes and what became of the files it staged ahead. */
    public Map<String, Long> directoryPrefetchCounters() {
        return prefetcher.counters();
    }

    public long failedFetches() {
        return fetcher.failedFetches();
    }

    /** Counters of the files hinted through {@code /.os2g/prefetch}. */
    public Map<String, Long> hintCounters() {
        return hints.counters();
    }

    /** Counters of the files staged through {@code /.os2g/warm}. */
    public Map<String, Long> warmCounters() {
        return warm.counters();
    }

    @Override
    public void close() {
        hints.close();
        warm.close();
        prefetcher.close();
        fetcher.close();
        handles.clear();
    }
}
