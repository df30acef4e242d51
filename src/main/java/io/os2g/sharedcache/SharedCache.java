package io.os2g.sharedcache;

import io.os2g.PerThread;
import io.os2g.WarningLimiter;
import io.os2g.diskcache.BlockKey;
import io.os2g.diskcache.BlockSigner;
import io.os2g.diskcache.DiskCache;
import io.os2g.store.MinioObjectStore;
import io.os2g.store.ObjectUploads;
import io.os2g.store.StoreException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;
import java.util.zip.CRC32C;
import javax.crypto.Mac;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cluster's tier below each node's disk cache: blocks of origin objects kept as objects of a cache
 * bucket on an S3-compatible store near the GPUs, so that a node reads what another node fetched.
 *
 * <p>A block's object is named by the SHA-256 of its {@link BlockKey} (origin endpoint and bucket, key,
 * ETag, range): a changed object is never served stale. It holds a header (magic, that name's digest,
 * the length, and what vouches for the bytes: an HMAC-SHA256 with the cluster's secret where one is
 * given, else a CRC32C) and the bytes; a read checks all of it, and a block that does not verify is
 * counted and not used (the origin's copy replaces it). Without a secret a damaged block is caught, a
 * forged one is not: whoever can write the bucket can serve bytes. Writes go behind the reads, on a
 * few threads of their own with a bounded queue: a full queue drops the block (counted), never slows a
 * read. A tier that fails (unreachable, slow, refusing) is bypassed for {@link #BYPASS}, with one
 * rate-limited warning; reads go to the origin meanwhile. A node that misses a block claims its fill
 * with an empty marker object created only if absent; a node that finds another's marker waits a little
 * for the block instead of fetching it too. Eviction belongs to the cache bucket (a lifecycle rule).
 */
public final class SharedCache implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(SharedCache.class);
    /** The layout's directory under the prefix: another layout would be another name. */
    static final String LAYOUT = "os2g-blocks-v1/";
    /** The magic of a block vouched for by a CRC32C, and of one signed with the cluster's secret. */
    static final byte[] CHECKSUMMED = "OS2GBLK1".getBytes(StandardCharsets.US_ASCII);
    static final byte[] SIGNED = "OS2GBLKS".getBytes(StandardCharsets.US_ASCII);
    /** How a block's object name ends: the SHA-256 of its key, in hex. */
    private static final java.util.regex.Pattern BLOCK_NAME = java.util.regex.Pattern.compile("/[0-9a-f]{64}$");
    private static final java.util.regex.Pattern BLOCK_OR_MARKER = java.util.regex.Pattern.compile("/[0-9a-f]{64}(\\.filling)?$");
    /** Magic, the name's SHA-256, the length, the MAC (or the CRC32C in its first 4 bytes). */
    static final int HEADER = 8 + 32 + 8 + 32;
    /** How long a failing tier is left alone. */
    static final Duration BYPASS = Duration.ofSeconds(10);
    /** Blocks waiting to be written, at most; more are dropped. */
    static final int WRITE_QUEUE = 1024;
    /**
     * Bytes of blocks queued or being written, at most; more are dropped. Each holds its staged chunk
     * pinned until copied, so this bounds what the writers keep from eviction.
     */
    static final long WRITE_BYTES = 64L << 20;
    /** PUTs in flight at once. */
    static final int WRITERS = 8;
    /** How a fill marker's name ends: the block's name and this. */
    static final String FILL_MARKER = ".filling";
    /** The first wait for a block another node is filling (jittered, doubling), and the most in all. */
    static final Duration AWAIT_FIRST = Duration.ofMillis(20);
    static final Duration AWAIT_FILL = Duration.ofMillis(500);

    /** Counters of the tier, read at one moment. */
    public record Counters(long hits, long misses, long bytesRead, long writes, long bytesWritten, long writeDrops,
                           long badBlocks, long errors, long awaitedFills, long awaitedFillHits, boolean bypassed) {
        public static final Counters NONE = new Counters(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, false);
    }

    private final MinioObjectStore store;
    private final String prefix;
    private final BlockSigner signer;
    private final LongSupplier clock;
    private final ThreadPoolExecutor writers;
    private final WarningLimiter warnings = new WarningLimiter(LOG);
    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();
    private final LongAdder bytesRead = new LongAdder();
    private final LongAdder writes = new LongAdder();
    private final LongAdder bytesWritten = new LongAdder();
    private final LongAdder writeDrops = new LongAdder();
    private final LongAdder badBlocks = new LongAdder();
    private final LongAdder errors = new LongAdder();
    private final LongAdder awaited = new LongAdder();
    private final LongAdder awaitedHits = new LongAdder();
    /** Cleared when the tier refuses conditional writes: every node then fetches what it misses. */
    private volatile boolean claims = true;
    private final java.util.concurrent.atomic.AtomicLong pendingBytes = new java.util.concurrent.atomic.AtomicLong();
    private volatile long bypassUntil;

    /**
     * @param store the cache bucket's client (its retries and deadlines bound a read of the tier)
     * @param prefix where the blocks go in the cache bucket: {@code ""} or ending in {@code /}
     * @param signer the cluster's secret that signs and verifies blocks; null for CRC32C only
     */
    public SharedCache(MinioObjectStore store, String prefix, BlockSigner signer) {
        this(store, prefix, signer, System::nanoTime);
    }

    SharedCache(MinioObjectStore store, String prefix, BlockSigner signer, LongSupplier clock) {
        this.store = store;
        this.prefix = prefix;
        this.signer = signer;
        this.clock = clock;
        this.bypassUntil = clock.getAsLong();
        this.writers = new ThreadPoolExecutor(WRITERS, WRITERS, 0, TimeUnit.MILLISECONDS, new ArrayBlockingQueue<>(WRITE_QUEUE),
                Thread.ofPlatform().daemon().name("os2g-shared-cache-", 0).factory(), new ThreadPoolExecutor.AbortPolicy());
    }

    /** The cache bucket's object that holds the block whose key hashes to {@code name} ({@link BlockKey#fileName}). */
    private String objectName(String name) {
        return prefix + LAYOUT + name.substring(0, 2) + "/" + name;
    }

    /**
     * Fills {@code sink} with the block of {@code key} if the tier has a good copy; false otherwise (a
     * miss, a block that does not verify, or a tier that fails or is being bypassed). The sink may have
     * been given part of a bad copy: it starts over for the origin.
     *
     * <p>On a miss this node claims the fill (a marker object created only if absent): false means the
     * caller fetches from the origin and {@link #admit}s the block. When another node holds the claim,
     * this one reads the tier again after jittered waits, up to {@link #AWAIT_FILL}, before it goes to
     * the origin itself, so nodes that start one epoch together fetch each block about once.
     */
    public boolean read(BlockKey key, DiskCache.BlockSink sink) {
        if (bypassed()) {
            return false;
        }
        String name = key.fileName();
        Found found = readBlock(key, name, sink);
        if (found != Found.MISSING) {
            return found == Found.HIT;
        }
        misses.increment();
        if (claim(name)) {
            return false;
        }
        awaited.increment();
        long waited = 0;
        for (long step = AWAIT_FIRST.toNanos(); waited < AWAIT_FILL.toNanos() && found == Found.MISSING; step *= 2) {
            long nanos = Math.min(AWAIT_FILL.toNanos() - waited, step / 2 + ThreadLocalRandom.current().nextLong(step));
            try {
                TimeUnit.NANOSECONDS.sleep(nanos);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
            waited += nanos;
            found = readBlock(key, name, sink);
        }
        if (found == Found.HIT) {
            awaitedHits.increment();
        }
        return found == Found.HIT;
    }

    /** What one read of a block's object found. */
    private enum Found { HIT, MISSING, UNUSABLE }

    private Found readBlock(BlockKey key, String name, DiskCache.BlockSink sink) {
        byte[] digest = HexFormat.of().parseHex(name);
        try {
            store.get(objectName(name), 0, HEADER + key.length(), "", body -> {
                ByteBuffer header = ByteBuffer.wrap(body.readNBytes(HEADER));
                if (header.remaining() < HEADER || !matches(header, 0, magic()) || !matches(header, 8, digest)
                        || header.getLong(40) != key.length()) {
                    throw new BadBlock("header");
                }
                try (Check check = check(digest, key.length())) {
                    sink.fill(new CheckedStream(body, key.length(), check));
                    if (!MessageDigest.isEqual(check.value(), Arrays.copyOfRange(header.array(), 48, HEADER))) {
                        throw new BadBlock(signer == null ? "checksum" : "signature");
                    }
                }
            });
            hits.increment();
            bytesRead.add(key.length());
            return Found.HIT;
        } catch (StoreException e) {
            if (e.kind() == StoreException.Kind.NOT_FOUND) {
                return Found.MISSING;
            } else if (e.kind() == StoreException.Kind.PROTOCOL || causedByBadBlock(e)) {
                // a block shorter or longer than its header says, or one that does not verify
                badBlocks.increment();
                LOG.debug("shared cache block {} of {} not used: {}", objectName(name), key.key(), e.toString());
            } else {
                failed(e);
            }
            return Found.UNUSABLE;
        }
    }

    /**
     * Claims the fill of the block named {@code name}: true when this node should fetch it (its marker
     * is new, or the tier cannot tell), false when another node's marker is there. A marker outlives its
     * fill (the lifecycle rule removes both): a node that finds the block missing past the wait fetches
     * and writes it itself.
     */
    private boolean claim(String name) {
        if (!claims) {
            return true;
        }
        try {
            return store.createIfAbsent(objectName(name) + FILL_MARKER);
        } catch (StoreException e) {
            if (e.kind() == StoreException.Kind.PROTOCOL || e.kind() == StoreException.Kind.ACCESS_DENIED) {
                claims = false;
                LOG.info("the shared cache at {} does not take conditional writes ({}): nodes fetch what they miss without "
                        + "waiting for each other's fills", store.endpoint(), e.getMessage());
            } else {
                failed(e);
            }
            return true;
        }
    }

    /**
     * Writes the block of {@code key} to the tier behind the read, from {@code source} (released once
     * copied); dropped, and released at once, when the writers are behind or the tier is being bypassed.
     */
    public void admit(BlockKey key, DiskCache.BlockSource source) {
        if (bypassed()) {
            source.release();
            writeDrops.increment();
            return;
        }
        if (pendingBytes.addAndGet(key.length()) > WRITE_BYTES) {
            dropped(key, source);
            return;
        }
        try {
            writers.execute(() -> {
                try {
                    write(key, source);
                } finally {
                    pendingBytes.addAndGet(-key.length());
                }
            });
        } catch (RejectedExecutionException e) {
            dropped(key, source);
        }
    }

    private void dropped(BlockKey key, DiskCache.BlockSource source) {
        pendingBytes.addAndGet(-key.length());
        source.release();
        writeDrops.increment();
    }

    private void write(BlockKey key, DiskCache.BlockSource source) {
        byte[] object = new byte[HEADER + Math.toIntExact(key.length())];
        boolean copied;
        try {
            copied = source.copyTo(ByteBuffer.wrap(object, HEADER, (int) key.length()).slice());
        } finally {
            source.release();
        }
        if (!copied || bypassed()) {
            writeDrops.increment();
            return;
        }
        String name = key.fileName();
        byte[] digest = HexFormat.of().parseHex(name);
        try (Check check = check(digest, key.length())) {
            check.update(object, HEADER, (int) key.length());
            ByteBuffer.wrap(object).put(magic()).put(digest).putLong(key.length()).put(check.value());
        }
        try {
            store.putObject(objectName(name), ObjectUploads.Body.of(object));
            writes.increment();
            bytesWritten.add(key.length());
        } catch (StoreException e) {
            writeDrops.increment();
            failed(e);
        }
    }

    private boolean bypassed() {
        return clock.getAsLong() - bypassUntil < 0;
    }

    private void failed(StoreException e) {
        errors.increment();
        bypassUntil = clock.getAsLong() + BYPASS.toNanos();
        warnings.warn("shared-cache", "the shared cache at {} failed ({}): reads go to the origin for {} s, then try it again",
                store.endpoint(), e.getMessage(), BYPASS.toSeconds());
    }

    /** What a cache bucket holds under a prefix: blocks, their bytes, the oldest and newest written. */
    public record Summary(long blocks, long bytes, long oldestMillis, long newestMillis) {
    }

    /** Lists the blocks under {@code prefix} of the cache bucket {@code store} reads. */
    public static Summary summarize(MinioObjectStore store, String prefix) {
        long[] s = {0, 0, Long.MAX_VALUE, 0};
        forEachObject(store, prefix, BLOCK_NAME, o -> {
            s[0]++;
            s[1] += Math.max(0, o.size() - HEADER);
            s[2] = Math.min(s[2], o.lastModifiedMillis());
            s[3] = Math.max(s[3], o.lastModifiedMillis());
        });
        return new Summary(s[0], s[1], s[0] == 0 ? 0 : s[2], s[3]);
    }

    /**
     * Deletes every block under {@code prefix} (nodes fetch them from the origin again) and every fill
     * marker (left, they would make the next misses wait); returns how many blocks.
     */
    public static long clear(MinioObjectStore store, String prefix) {
        long[] removed = {0};
        forEachObject(store, prefix, BLOCK_OR_MARKER, o -> {
            store.deleteObject(o.key());
            if (BLOCK_NAME.matcher(o.key()).find()) {
                removed[0]++;
            }
        });
        return removed[0];
    }

    private static void forEachObject(MinioObjectStore store, String prefix, java.util.regex.Pattern names,
                                      java.util.function.Consumer<io.os2g.store.ObjectSummary> each) {
        for (String fanOut : store.list(prefix + LAYOUT).commonPrefixes()) {
            store.list(fanOut).objects().stream().filter(o -> names.matcher(o.key()).find()).forEach(each);
        }
    }

    public Counters counters() {
        return new Counters(hits.sum(), misses.sum(), bytesRead.sum(), writes.sum(), bytesWritten.sum(), writeDrops.sum(),
                badBlocks.sum(), errors.sum(), awaited.sum(), awaitedHits.sum(), bypassed());
    }

    /** Waits a little for the blocks queued to be written, then stops. */
    @Override
    public void close() {
        writers.shutdown();
        try {
            if (!writers.awaitTermination(5, TimeUnit.SECONDS)) {
                writers.shutdownNow();
            }
        } catch (InterruptedException e) {
            writers.shutdownNow();
            Thread.currentThread().interrupt();
        }
        store.close();
    }

    private static boolean matches(ByteBuffer buffer, int at, byte[] expected) {
        return buffer.slice(at, expected.length).equals(ByteBuffer.wrap(expected));
    }

    private static boolean causedByBadBlock(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof BadBlock) {
                return true;
            }
        }
        return false;
    }

    private byte[] magic() {
        return signer == null ? CHECKSUMMED : SIGNED;
    }

    /** What vouches for a block's bytes, fed as they pass: 32 bytes at the end; closed once its value is taken. */
    private interface Check extends AutoCloseable {
        void update(byte[] bytes, int offset, int length);

        void update(ByteBuffer bytes);

        byte[] value();

        @Override
        default void close() {
        }
    }

    /** A block's check: HMAC-SHA256 with the secret over its name's digest, length and bytes; else CRC32C of the bytes. */
    private Check check(byte[] digest, long length) {
        if (signer == null) {
            CRC32C crc = new CRC32C();
            return new Check() {
                @Override
                public void update(byte[] bytes, int offset, int n) {
                    crc.update(bytes, offset, n);
                }

                @Override
                public void update(ByteBuffer bytes) {
                    crc.update(bytes);
                }

                @Override
                public byte[] value() {
                    return ByteBuffer.allocate(32).putInt((int) crc.getValue()).array();
                }
            };
        }
        PerThread.Lease<Mac> lease = signer.mac();
        Mac mac = lease.value();
        mac.update(digest);
        mac.update(ByteBuffer.allocate(8).putLong(length).array());
        return new Check() {
            @Override
            public void update(byte[] bytes, int offset, int n) {
                mac.update(bytes, offset, n);
            }

            @Override
            public void update(ByteBuffer bytes) {
                mac.update(bytes);
            }

            @Override
            public byte[] value() {
                return mac.doFinal();
            }

            @Override
            public void close() {
                lease.close();
            }
        };
    }

    /**
     * A block whose header or bytes do not verify: unchecked, so that the store does not take it for a
     * broken connection and ask again.
     */
    static final class BadBlock extends RuntimeException {
        BadBlock(String what) {
            super("the block's " + what + " does not verify");
        }
    }

    /**
     * The next {@code length} bytes of a body, fed to a check as they are read; then its end. A body
     * that is a channel (os2g's own GET path) is read as one, into the reader's native buffer, so the
     * bytes reach staging with no copy through the heap.
     */
    private static final class CheckedStream extends InputStream implements ReadableByteChannel {
        private final InputStream in;
        private final Check check;
        private long left;

        CheckedStream(InputStream in, long length, Check check) {
            this.in = in;
            this.left = length;
            this.check = check;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (left == 0) {
                return -1;
            }
            int n = in.read(b, off, (int) Math.min(len, left));
            if (n < 0) {
                throw new BadBlock("length");
            }
            check.update(b, off, n);
            left -= n;
            return n;
        }

        @Override
        public int read(ByteBuffer target) throws IOException {
            if (left == 0) {
                return -1;
            }
            if (!(in instanceof ReadableByteChannel channel)) {
                byte[] piece = new byte[(int) Math.min(Math.min(target.remaining(), left), 64 * 1024)];
                int n = read(piece, 0, piece.length);
                if (n > 0) {
                    target.put(piece, 0, n);
                }
                return n;
            }
            int start = target.position();
            int limit = target.limit();
            target.limit(start + (int) Math.min(target.remaining(), left));
            int n;
            try {
                n = channel.read(target);
            } finally {
                target.limit(limit);
            }
            if (n < 0) {
                throw new BadBlock("length");
            }
            check.update(target.duplicate().position(start).limit(start + n));
            left -= n;
            return n;
        }

        @Override
        public boolean isOpen() {
            return true;
        }

        @Override
        public void close() {
            // the body is the store's to close
        }
    }
}
