package io.os2g.diskcache;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.os2g.CachedFile;
import io.os2g.PerThread;
import io.os2g.PrivateDirectory;
import io.os2g.VerifiedFile;
import io.os2g.WarningLimiter;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileStore;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.UserDefinedFileAttributeView;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Blocks of objects on a local disk, below the staging region: a chunk missing from staging is read
 * from here when it is here, and a chunk fetched from the store is written here off the read path.
 * Keyed by {@link BlockKey} (store, bucket, key, ETag, range), so it survives remounts and is shared by
 * every os2g process on the node that names the same directory. Each block is checksummed; one that
 * does not verify is dropped and counted, never served. Bounded by a size and a floor of free space on
 * its file system: least recently used blocks go first ({@link Sweeper}). A failing disk stops
 * admission for a while (a warning); reads go on from the store.
 */
public final class DiskCache implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(DiskCache.class);
    /** The layout's directory under the cache directory: another layout would be another name. */
    static final String LAYOUT = "os2g-cache-v3";
    /** Layouts before this one, which no os2g reads any more: {@code os2g cache clear} removes them. */
    static final java.util.List<String> OLDER_LAYOUTS = java.util.List.of("os2g-cache-v1", "os2g-cache-v2");
    /** What a cache directory must have left above its floor of free space. */
    static final long MIN_ROOM = 64L << 20;
    /** Blocks written between two sweeps, at most (a tenth of the size bound, else 1 GiB). */
    static final long SWEEP_EVERY_MAX = 1L << 30;
    /** A block read is marked used again only when its last mark is older than this. */
    static final Duration TOUCH_EVERY = Duration.ofMinutes(1);
    /** Admission stops this long after a write failed. */
    static final Duration PAUSE_AFTER_FAILURE = Duration.ofSeconds(30);
    /**
     * Blocks waiting for the writer thread, at most; beyond them the fetch that admits one writes it
     * itself (back-pressure: an epoch that outruns the disk slows to its speed rather than leave blocks
     * out, which the next epoch would fetch again).
     */
    static final int WRITE_QUEUE = 16;

    private final Path root;
    private final Path blocks;
    private final Path tmp;
    private final Sweeper sweeper;
    private final BlockSigner signer;
    private final long maxBytes;
    private final long sweepEvery;
    private final ThreadPoolExecutor writer;
    private final WarningLimiter warnings = new WarningLimiter(LOG);
    private final AtomicLong writtenSinceSweep = new AtomicLong();
    private volatile long pausedUntilNanos = System.nanoTime();
    /** The writer thread's buffer (a fetch writing a block itself, the writer being behind, takes a heap one). */
    private ByteBuffer writeBuffer = ByteBuffer.allocateDirect(0);
    private volatile Thread writerThread;
    /**
     * Blocks this process verified for the kernel to read, or wrote itself, with their file as it was
     * then: a file still the same (inode, size, change time) is handed on without reading it again. A
     * write to the file, a file put in its place, or a touch changes its change time, so it is verified
     * afresh.
     */
    private final Cache<BlockKey, FileState> verified = Caffeine.newBuilder().maximumSize(1 << 16).build();

    /** What a block's file was when it was verified: its device and inode, size, and change time. */
    private record FileState(Object dev, Object ino, Object size, Object changed) {
    }

    /** Each caller's buffer for checksumming a block it hands on unread ({@link #verifiedFile}). */
    private final PerThread<ByteBuffer> verifyBuffers = PerThread.withInitial(() -> ByteBuffer.allocateDirect(64 << 10));

    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();
    private final LongAdder bytesRead = new LongAdder();
    private final LongAdder bytesWritten = new LongAdder();
    private final LongAdder corrupt = new LongAdder();
    private final LongAdder verifications = new LongAdder();
    private final LongAdder writeErrors = new LongAdder();
    private final LongAdder notAdmitted = new LongAdder();

    /** Counters of one process's use of a cache. */
    public record Counters(long hits, long misses, long bytesRead, long bytesWritten, long evictions, long corrupt,
                           long writeErrors, long notAdmitted) {
    }

    /**
     * Where a block's bytes come from when it is written: they fill {@code target} (all of it, from its
     * position to its limit); false when they are gone (evicted from staging). {@link #release} is
     * called once when the cache is done with it, written or not (a source that holds its bytes pinned
     * lets them go there).
     */
    @FunctionalInterface
    public interface BlockSource {
        boolean copyTo(ByteBuffer target);

        default void release() {
        }
    }

    /** Where a block's bytes go when it is read (a staging reservation). */
    @FunctionalInterface
    public interface BlockSink {
        void fill(InputStream in) throws IOException;
    }

    private DiskCache(Path root, Sweeper sweeper, BlockSigner signer, long maxBytes) {
        this.root = root;
        this.signer = signer;
        this.maxBytes = maxBytes;
        this.blocks = root.resolve("blocks");
        this.tmp = root.resolve("tmp");
        this.sweeper = sweeper;
        this.sweepEvery = Math.min(SWEEP_EVERY_MAX, Math.max(MIN_ROOM, maxBytes / 10));
        this.writer = new ThreadPoolExecutor(1, 1, 0, TimeUnit.SECONDS, new ArrayBlockingQueue<>(WRITE_QUEUE),
                task -> writerThread = Thread.ofPlatform().daemon().name("os2g-disk-cache").unstarted(task),
                new ThreadPoolExecutor.CallerRunsPolicy());
    }

    /**
     * Opens (creating it if need be) the cache in {@code directory}.
     *
     * @param maxBytes the most its blocks take ({@link Long#MAX_VALUE}: only the floor bounds it)
     * @param minFreePercent the share of its file system kept free
     * @throws CacheDirectoryException when the directory cannot be a cache (one line for the user)
     */
    public static DiskCache open(Path directory, long maxBytes, int minFreePercent) {
        Path root = directory.resolve(LAYOUT);
        try {
            Files.createDirectories(directory);
            // the blocks are the bucket's bytes, served as they are: only this user may read or plant them
            PrivateDirectory.checkParent(directory);
            PrivateDirectory.ensure(root);
            PrivateDirectory.ensure(root.resolve("blocks"));
            PrivateDirectory.ensure(root.resolve("tmp"));
        } catch (IOException | UnsupportedOperationException e) {
            throw new CacheDirectoryException("cache directory " + directory + " cannot be used: " + reason(e));
        }
        BlockSigner signer;
        try {
            Path probe = Files.createTempFile(root.resolve("tmp"), "probe", ".tmp");
            try {
                Files.write(probe, new byte[] {1});
                probeAttributes(directory, probe);
            } finally {
                Files.delete(probe);
            }
            signer = BlockSigner.open(root);
        } catch (IOException e) {
            throw new CacheDirectoryException("cache directory " + directory + " is not writable: " + reason(e));
        }
        Sweeper sweeper = new Sweeper(root.resolve("blocks"), root.resolve("tmp"), maxBytes, minFreePercent, Sweeper.space(root));
        long room = sweeper.roomAboveFloor();
        if (room < MIN_ROOM) {
            throw new CacheDirectoryException("cache directory " + directory + " has " + (Math.max(0, room) >> 20)
                    + " MiB above the " + minFreePercent + "% of its file system kept free; it needs at least "
                    + (MIN_ROOM >> 20) + " MiB");
        }
        DiskCache cache = new DiskCache(root, sweeper, signer, maxBytes);
        cache.writer.execute(cache::sweep); // what other processes left, and a bound that shrank
        return cache;
    }

    /** Each block's header is an extended attribute: a file system without them cannot hold the cache. */
    private static void probeAttributes(Path directory, Path probe) throws IOException {
        try {
            UserDefinedFileAttributeView view =
                    Files.getFileAttributeView(probe, UserDefinedFileAttributeView.class);
            if (view == null) {
                throw new UnsupportedOperationException("no extended attributes");
            }
            view.write(BlockFile.ATTRIBUTE, ByteBuffer.wrap(new byte[] {1}));
        } catch (FileSystemException | UnsupportedOperationException e) {
            throw new CacheDirectoryException("cache directory " + directory + " is on a file system without user extended "
                    + "attributes, which hold each block's checksum (" + (e instanceof FileSystemException f
                    && f.getReason() != null ? f.getReason() : e.getMessage()) + ")");
        }
    }

    private static String reason(Exception e) {
        return e instanceof java.nio.file.AccessDeniedException ? "permission denied"
                : e instanceof FileSystemException f && f.getReason() != null ? f.getReason()
                : e.getMessage() != null ? e.getMessage() : e.toString();
    }

    /**
     * Fills {@code sink} with the block of {@code key} if this cache has a good copy; false otherwise (a
     * copy that does not verify is dropped and counted). The sink may have been given part of a bad
     * copy: it starts over for the store.
     */
    public boolean read(BlockKey key, BlockSink sink) {
        Path file = path(key);
        long lastUsed;
        try (BlockFile.Reader in = BlockFile.open(file, key, signer)) {
            sink.fill(in);
            in.verify();
            lastUsed = in.lastUsedMillis();
        } catch (NoSuchFileException e) {
            misses.increment();
            return false;
        } catch (BlockFile.Corrupt e) {
            dropCorrupt(file, key, e.getMessage());
            return false;
        } catch (IOException | UncheckedIOException e) {
            dropCorrupt(file, key, e.toString()); // unreadable, as bad as corrupt
            return false;
        }
        served(file, key, lastUsed);
        return true;
    }

    /** Blocks read whole to verify them before the kernel was given their file, since this cache opened. */
    long verifications() {
        return verifications.sum();
    }

    /** Whether a block of {@code key} is on disk (not verified: a read still checks it). */
    public boolean contains(BlockKey key) {
        return Files.exists(path(key));
    }

    /**
     * The bytes a directory may fill into this cache ahead of its readers: half of what the cache may
     * still take (its size bound, or the room left above the floor of free space, whichever is less).
     */
    public long fillBudget() {
        return Math.max(0, Math.min(maxBytes, sweeper.roomAboveFloor())) / 2;
    }

    /**
     * The file holding exactly the block of {@code key}, once its bytes are verified here, for the kernel
     * to read itself, as it is after this call (a hit may mark it used, which changes its change time);
     * null when this cache has no good copy (a bad one is dropped and counted). A hit: the block counts
     * as recently used.
     */
    public VerifiedFile verifiedFile(BlockKey key) {
        Path file = path(key);
        Map<String, Object> before;
        try {
            before = Files.readAttributes(file, VerifiedFile.ATTRIBUTES);
        } catch (NoSuchFileException e) {
            misses.increment();
            return null;
        } catch (IOException e) {
            dropCorrupt(file, key, e.getMessage());
            return null;
        }
        FileState state = fileState(before);
        if (state.equals(verified.getIfPresent(key))) { // unchanged since it verified here
            return servedVerified(file, key, state, before, ((FileTime) before.get("lastModifiedTime")).toMillis());
        }
        long lastUsed;
        verifications.increment();
        try (BlockFile.Reader in = BlockFile.open(file, key, signer);
             PerThread.Lease<ByteBuffer> buffer = verifyBuffers.take()) {
            in.readToEndAndVerify(buffer.value());
            lastUsed = in.lastUsedMillis();
        } catch (NoSuchFileException e) {
            misses.increment();
            return null;
        } catch (IOException | UncheckedIOException e) {
            dropCorrupt(file, key, e.getMessage());
            return null;
        }
        try { // remembered only when the file did not change while it was read
            if (!state.equals(fileState(Files.readAttributes(file, "unix:dev,ino,size,ctime")))) {
                served(file, key, lastUsed);
                return VerifiedFile.of(file, before); // no longer this: the kernel is not given it
            }
        } catch (IOException e) {
            served(file, key, lastUsed); // gone meanwhile: verified as read, not remembered
            return VerifiedFile.of(file, before);
        }
        verified.put(key, state);
        return servedVerified(file, key, state, before, lastUsed);
    }

    /**
     * {@link #served}, for a block remembered as verified in {@code state} (read as {@code attributes}):
     * a touch moves what is remembered with it. The file as it is after.
     */
    private VerifiedFile servedVerified(Path file, BlockKey key, FileState state, Map<String, Object> attributes,
                                        long lastUsedMillis) {
        if (!served(file, key, lastUsedMillis)) {
            return VerifiedFile.of(file, attributes);
        }
        try {
            Map<String, Object> touched = Files.readAttributes(file, VerifiedFile.ATTRIBUTES);
            verified.asMap().replace(key, state, fileState(touched));
            return VerifiedFile.of(file, touched);
        } catch (IOException e) {
            verified.invalidate(key);
            return VerifiedFile.of(file, attributes); // swept meanwhile: the kernel is not given it
        }
    }

    private static FileState fileState(Map<String, Object> a) {
        return new FileState(a.get("dev"), a.get("ino"), a.get("size"), a.get("ctime"));
    }

    /**
     * Counts a hit and marks the block recently used (its modification time, at most every {@link #TOUCH_EVERY});
     * true when it was marked.
     */
    private boolean served(Path file, BlockKey key, long lastUsedMillis) {
        hits.increment();
        bytesRead.add(key.length());
        long now = System.currentTimeMillis();
        if (now - lastUsedMillis < TOUCH_EVERY.toMillis()) {
            return false; // recent enough for the sweep's order; an epoch's reads leave the disk's inodes alone
        }
        try {
            Files.setLastModifiedTime(file, FileTime.fromMillis(now));
            return true;
        } catch (IOException e) {
            return false; // swept meanwhile by another process: it was served whole already
        }
    }

    private void dropCorrupt(Path file, BlockKey key, String why) {
        corrupt.increment();
        misses.increment();
        warnings.warn("corrupt", "disk cache block of {} at {} dropped ({}): fetched again", key.key(), key.offset(), why);
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            // another process dropped it, or the disk is failing: the next read tries again
        }
    }

    /**
     * Writes the block of {@code key} later, on the cache's own thread, from {@code source}; not at all
     * when the writes are behind, the disk failed recently, or the block is there already.
     */
    public void admit(BlockKey key, BlockSource source) {
        if (System.nanoTime() - pausedUntilNanos < 0 || writer.isShutdown()) {
            notAdmitted.increment();
            source.release();
            return;
        }
        writer.execute(() -> { // behind: written here and now (CallerRunsPolicy)
            try {
                write(key, source);
            } finally {
                source.release();
            }
        });
    }

    /**
     * Writes the block of {@code key} from {@code data} now, in this thread; not at all when the disk
     * failed recently or the block is there already.
     */
    public void put(BlockKey key, ByteBuffer data) {
        if (System.nanoTime() - pausedUntilNanos < 0) {
            notAdmitted.increment();
            return;
        }
        Path file = path(key);
        if (!Files.exists(file)) {
            store(file, key, data);
        }
    }

    private void write(BlockKey key, BlockSource source) {
        Path file = path(key);
        if (Files.exists(file)) {
            return; // another process wrote it, or this one did before
        }
        ByteBuffer data;
        if (Thread.currentThread() == writerThread) {
            if (writeBuffer.capacity() < key.length()) {
                writeBuffer = ByteBuffer.allocateDirect((int) key.length());
            }
            data = writeBuffer.clear().limit((int) key.length());
        } else {
            data = ByteBuffer.allocate((int) key.length());
        }
        if (!source.copyTo(data.duplicate())) {
            notAdmitted.increment();
            return;
        }
        store(file, key, data);
    }

    private void store(Path file, BlockKey key, ByteBuffer data) {
        try {
            try {
                writeBlock(file, key, data);
            } catch (NoSuchFileException gone) {
                recreateIfDeleted(); // the directory removed under a running mount: laid out again
                writeBlock(file, key, data);
            }
            bytesWritten.add(key.length());
            if (writtenSinceSweep.addAndGet(key.length()) >= sweepEvery) {
                sweep();
            }
        } catch (IOException | UncheckedIOException e) {
            writeErrors.increment();
            pausedUntilNanos = System.nanoTime() + PAUSE_AFTER_FAILURE.toNanos();
            warnings.warn("write", "disk cache at {}: a block could not be written ({}); no new blocks for {} s, reads go on from the store",
                    root.getParent(), e.toString(), PAUSE_AFTER_FAILURE.toSeconds());
            sweep(); // a full disk: make room for when admission resumes
        }
    }

    /** Writes the block to a temporary file and renames it into place: whole, or not at all. */
    private void writeBlock(Path file, BlockKey key, ByteBuffer data) throws IOException {
        Path temporary = tmp.resolve(file.getFileName() + "." + Long.toHexString(ThreadLocalRandom.current().nextLong()) + ".tmp");
        try {
            try {
                Files.createDirectory(file.getParent()); // not its parents: a cache directory deleted is laid out again, private
            } catch (java.nio.file.FileAlreadyExistsException e) {
                // made by an earlier block
            }
            BlockFile.write(temporary, key, data, signer);
            Object written = Files.getAttribute(temporary, "unix:ino"); // the temporary's name is this process's alone
            try {
                Files.move(temporary, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                throw new IOException("the cache directory's file system cannot rename atomically", e);
            }
            rememberWritten(file, key, written);
        } catch (IOException | RuntimeException e) {
            try {
                Files.deleteIfExists(temporary);
            } catch (IOException ignored) {
                // the directory itself is gone or failing
            }
            throw e;
        }
    }

    /**
     * Remembers a block this process just wrote as verified (its bytes are the ones it was given), while
     * the file in its place is still the one written: a later epoch's first open does not read it again.
     */
    private void rememberWritten(Path file, BlockKey key, Object inode) {
        try {
            Map<String, Object> now = Files.readAttributes(file, "unix:dev,ino,size,ctime");
            if (inode.equals(now.get("ino"))) {
                verified.put(key, fileState(now));
            }
        } catch (IOException e) {
            // swept or replaced meanwhile: verified when it is read
        }
    }

    /** The cache directory removed under a running mount: laid out again, so blocks are kept from now on. */
    private void recreateIfDeleted() {
        try {
            Files.createDirectories(root.getParent());
            PrivateDirectory.ensure(root);
            PrivateDirectory.ensure(blocks);
            PrivateDirectory.ensure(tmp);
        } catch (IOException e) {
            // cannot: admission stays paused and is tried again later
        }
    }

    private void sweep() {
        writtenSinceSweep.set(0);
        try {
            sweeper.sweep();
        } catch (IOException | UncheckedIOException e) {
            warnings.warn("sweep", "disk cache at {}: sweeping failed: {}", root.getParent(), e.toString());
        }
    }

    /**
     * The file that would hold exactly the block of {@code key}, offered for the kernel to read: not
     * looked at until it is verified.
     */
    public CachedFile cachedFile(BlockKey key) {
        return new Offer(key, path(key));
    }

    private final class Offer implements CachedFile {
        private final BlockKey key;
        private final Path path;

        Offer(BlockKey key, Path path) {
            this.key = key;
            this.path = path;
        }

        @Override
        public Path path() {
            return path;
        }

        @Override
        public VerifiedFile verify() {
            return verifiedFile(key);
        }

        @Override
        public void reused(VerifiedFile kept) {
            served(path, key, kept.modifiedMillis()); // its mark renewed when due, which a later open then sees changed
        }
    }

    Path path(BlockKey key) {
        String name = key.fileName();
        return blocks.resolve(name.substring(0, 2)).resolve(name + ".blk");
    }

    public Counters counters() {
        return new Counters(hits.sum(), misses.sum(), bytesRead.sum(), bytesWritten.sum(), sweeper.evictions(), corrupt.sum(),
                writeErrors.sum(), notAdmitted.sum());
    }

    /** Waits for the blocks admitted so far to be written (tests, and a clean close). */
    public void flush(Duration timeout) {
        java.util.concurrent.CompletableFuture<Void> done = new java.util.concurrent.CompletableFuture<>();
        try {
            writer.execute(() -> done.complete(null));
            done.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException | java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            // closed, or behind: what is not written is fetched again next time
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        writer.shutdown();
        try {
            if (!writer.awaitTermination(5, TimeUnit.SECONDS)) {
                writer.shutdownNow();
            }
        } catch (InterruptedException e) {
            writer.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }

    /** A cache directory that cannot be used: refused before mounting. */
    public static final class CacheDirectoryException extends RuntimeException {
        public CacheDirectoryException(String message) {
            super(message);
        }
    }

    /** What a cache directory holds, for {@code os2g cache stats}. */
    public record Summary(long blocks, long bytes, long oldestUseMillis, long newestUseMillis, long usableBytes, long totalBytes) {
    }

    /**
     * What the cache in {@code directory} holds (every process's blocks).
     *
     * @throws CacheDirectoryException when there is no cache there
     */
    public static Summary summarize(Path directory) throws IOException {
        Path root = existing(directory);
        Sweeper sweeper = new Sweeper(root.resolve("blocks"), root.resolve("tmp"), Long.MAX_VALUE, 0, Sweeper.space(root));
        java.util.List<Sweeper.Block> all = sweeper.list();
        FileStore store = Files.getFileStore(root);
        return new Summary(all.size(), all.stream().mapToLong(Sweeper.Block::size).sum(),
                all.stream().mapToLong(Sweeper.Block::lastUsedMillis).min().orElse(0),
                all.stream().mapToLong(Sweeper.Block::lastUsedMillis).max().orElse(0),
                store.getUsableSpace(), store.getTotalSpace());
    }

    /**
     * Deletes every block of the cache in {@code directory} (mounts using it fetch again); returns how
     * many went.
     *
     * @throws CacheDirectoryException when there is no cache there
     */
    public static long clear(Path directory) throws IOException {
        Path root = existing(directory);
        Sweeper sweeper = new Sweeper(root.resolve("blocks"), root.resolve("tmp"), Long.MAX_VALUE, 0, Sweeper.space(root));
        long removed = 0;
        for (Sweeper.Block b : sweeper.list()) {
            if (Files.deleteIfExists(b.path())) {
                removed++;
            }
        }
        return removed + clearOlderLayout(directory);
    }

    /** The blocks of the layouts before this one, which no os2g reads any more. */
    private static long clearOlderLayout(Path directory) throws IOException {
        long removed = 0;
        for (String layout : OLDER_LAYOUTS) {
            Path older = directory.resolve(layout);
            if (!Files.isDirectory(older, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                continue;
            }
            try (java.util.stream.Stream<Path> tree = Files.walk(older)) {
                for (Path p : tree.sorted(java.util.Comparator.reverseOrder()).toList()) {
                    if (p.toString().endsWith(".blk")) {
                        removed++;
                    }
                    Files.deleteIfExists(p);
                }
            }
        }
        return removed;
    }

    private static Path existing(Path directory) {
        Path root = directory.resolve(LAYOUT);
        if (!Files.isDirectory(root.resolve("blocks"))) {
            throw new CacheDirectoryException("no os2g disk cache in " + directory + " (no " + LAYOUT + "/blocks)");
        }
        return root;
    }
}
