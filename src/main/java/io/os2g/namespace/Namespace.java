package io.os2g.namespace;

import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.LoadingCache;
import com.github.benmanes.caffeine.cache.Ticker;
import io.os2g.Errno;
import io.os2g.store.Listings;
import java.time.Duration;
import java.util.NavigableMap;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;

/**
 * Resolves mount paths to nodes from cached directory listings.
 *
 * <p>Each directory is listed once and kept for the metadata TTL; concurrent lookups in a directory
 * that is not cached share one listing (Caffeine's per-key loading). A path is resolved component by
 * component through the cached parents, so a negative lookup costs nothing once its parent is cached.
 */
public final class Namespace {

    /** Directories kept at most; each holds its entries, so this bounds metadata memory. */
    private static final long MAX_CACHED_DIRECTORIES = 100_000;
    /**
     * Sub-directory listings in flight ahead of a walker, and how many sub-directories of one listing
     * are listed ahead: enough that os.walk or an ImageFolder scan finds its next directories cached
     * (a LIST costs a server round trip), few enough that one huge directory cannot flood the server.
     */
    private static final int MAX_LISTS_AHEAD = 8;
    private static final int MAX_SUBDIRECTORIES_AHEAD = 256;

    private final Semaphore listsAhead = new Semaphore(MAX_LISTS_AHEAD);
    private final ExecutorService listAheadExecutor = Executors.newVirtualThreadPerTaskExecutor();
    private final InodeTable inodes = new InodeTable();
    private final DirectoryBuilder builder = new DirectoryBuilder(inodes);
    private final Node.Dir root;
    private final LoadingCache<Node.Dir, Directory> directories;
    private final LocalEntries local;

    /**
     * @param listings where directory levels come from
     * @param rootPrefix the bucket prefix shown as the mount root: {@code ""} or ending in {@code /}
     * @param ttl how long a listing is trusted; null means forever (immutable datasets)
     * @param ticker the clock of the cache (tests pass a fake one)
     */
    public Namespace(Listings listings, String rootPrefix, Duration ttl, Ticker ticker) {
        if (!rootPrefix.isEmpty() && !rootPrefix.endsWith("/")) {
            throw new IllegalArgumentException("root prefix must be empty or end in /: prefix=" + rootPrefix);
        }
        this.root = new Node.Dir(InodeTable.ROOT, rootPrefix);
        Caffeine<Object, Object> cache = Caffeine.newBuilder().maximumSize(MAX_CACHED_DIRECTORIES).ticker(ticker);
        if (ttl != null) {
            cache.expireAfterWrite(ttl);
        }
        this.directories = cache.build(dir -> builder.build(dir, listings.list(dir.prefix())));
        this.local = new LocalEntries(ttl == null ? -1 : ttl.toNanos(), ticker::read);
    }

    public Namespace(Listings listings, String rootPrefix, Duration ttl) {
        this(listings, rootPrefix, ttl, Ticker.systemTicker());
    }

    public Node.Dir root() {
        return root;
    }

    /**
     * The directory's entries for readdir: like {@link #list}, and the first time a listing is read,
     * its sub-directories are listed ahead in the background, so a tree walk waits for one round trip
     * per level instead of one per directory.
     */
    public Directory readdir(Node.Dir dir) {
        Directory directory = list(dir);
        if (directory.subdirectoriesRequested().compareAndSet(false, true)) {
            int ahead = 0;
            for (Node node : directory.entries().values()) {
                if (node instanceof Node.Dir sub && directories.getIfPresent(sub) == null) {
                    listAheadExecutor.execute(() -> listAhead(sub));
                    if (++ahead == MAX_SUBDIRECTORIES_AHEAD) {
                        break;
                    }
                }
            }
        }
        return directory;
    }

    private void listAhead(Node.Dir dir) {
        try {
            listsAhead.acquire();
        } catch (InterruptedException e) {
            return;
        }
        try {
            directories.get(dir);
        } catch (RuntimeException e) {
            // a failed listing is not cached; the reader that needs it will list again and see why
        } finally {
            listsAhead.release();
        }
    }

    /** The listing of the directory at {@code prefix} if it is cached now, else null (never lists). */
    public Directory cachedDirectory(String prefix) {
        Node.Dir dir = prefix.equals(root.prefix()) ? root : new Node.Dir(inodes.inodeOf(prefix), prefix);
        return directories.getIfPresent(dir);
    }

    /**
     * The directory at {@code prefix} listed afresh (the cached listing is dropped first): for a shim in
     * another process, whose own cache has expired; this namespace keeps the result for the prefetcher.
     */
    public Directory relist(String prefix) {
        Node.Dir dir = prefix.equals(root.prefix()) ? root : new Node.Dir(inodes.inodeOf(prefix), prefix);
        directories.invalidate(dir);
        return list(dir);
    }

    /** The directory's entries, listed now or taken from the cache, with what this mount changed in it. */
    public Directory list(Node.Dir dir) {
        Directory listed = listed(dir);
        NavigableMap<String, Node> entries = local.merge(dir.prefix(), listed.entries());
        return entries == listed.entries() ? listed : new Directory(listed.self(), entries, listed.subdirectoriesRequested());
    }

    private Directory listed(Node.Dir dir) {
        try {
            return directories.get(dir);
        } catch (CompletionException e) {
            throw e.getCause() instanceof RuntimeException re ? re : e;
        }
    }

    /** The entry {@code name} of {@code dir}, or null: what this mount changed, else the listing's. */
    public Node entry(Node.Dir dir, String name) {
        Node changed = local.lookup(dir.prefix(), name);
        if (changed != null) {
            return changed == LocalEntries.DELETED ? null : changed;
        }
        return listed(dir).entry(name);
    }

    /**
     * A file being written or a directory made here: {@code name} in {@code dir} until {@link #release}d,
     * whatever listings say.
     */
    public void hold(Node.Dir dir, String name, Node node) {
        local.hold(dir.prefix(), name, node);
    }

    /** A file published here: {@code name} in {@code dir} at once, and for listings made before it (the TTL). */
    public void published(Node.Dir dir, String name, Node.File file) {
        local.settle(dir.prefix(), name, file);
    }

    /** A key deleted here: {@code name} is gone from {@code dir} at once, whatever cached listings say. */
    public void deleted(Node.Dir dir, String name) {
        local.settle(dir.prefix(), name, null);
    }

    /** What {@link #hold} put there is taken back (a write abandoned, a directory removed). */
    public void release(Node.Dir dir, String name) {
        local.remove(dir.prefix(), name);
    }

    /** The node of a directory or file key as every process numbers it. */
    public long inodeOf(String keyOrPrefix) {
        return inodes.inodeOf(keyOrPrefix);
    }

    /**
     * The node at {@code path}, an absolute mount path such as {@code /train/cat/1.jpg}.
     *
     * @throws NamespaceException ENOENT when a component is missing, ENOTDIR when a file is used as a
     *     directory
     */
    public Node resolve(String path) {
        Node node = root;
        int start = 1;
        int length = path.length();
        while (start < length) {
            int end = path.indexOf('/', start);
            if (end < 0) {
                end = length;
            }
            if (end > start) {
                if (!(node instanceof Node.Dir dir)) {
                    throw new NamespaceException(Errno.ENOTDIR, "not a directory: " + path);
                }
                Node next = entry(dir, path.substring(start, end));
                if (next == null) {
                    throw new NamespaceException(Errno.ENOENT, "no such file: " + path);
                }
                node = next;
            }
            start = end + 1;
        }
        return node;
    }

    /** Stops listing ahead. */
    public void close() {
        listAheadExecutor.shutdownNow();
    }

}
