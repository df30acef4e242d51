package io.os2g.agent;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.RemovalCause;
import io.os2g.codec.Compression;
import io.os2g.codec.RangeInputStream;
import io.os2g.codec.RangeSource;
import io.os2g.store.Listing;
import io.os2g.store.ObjectStore;
import io.os2g.store.ObjectSummary;
import io.os2g.store.StoreException;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.commons.io.input.BoundedInputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The bucket with each {@code NAME.gz} and {@code NAME.zst} object also shown as {@code NAME}, its
 * decompressed contents ({@code --decompress}). The agent's fetches read the plain file by chunk like any
 * other; this store decodes.
 *
 * <p><b>Size.</b> {@code stat} must show the exact decompressed size without decoding: it is the
 * {@code x-amz-meta-uncompressed-size} of the object when set, else what the format states (zstd's frame
 * content size, gzip's ISIZE), each found with one small request per object when its directory is listed
 * (in parallel, cached per ETag). An object that states no size and has no such metadata is not shown
 * decompressed (logged once). If decoding ends before or after that size, the read of the last chunk fails
 * with EIO: never a silently short or long file.
 *
 * <p><b>Seeking.</b> Compressed streams decode from the start. Each plain file has a decoder cursor (kept for
 * the {@value #MAX_CURSORS} files read most recently); a read at the cursor continues it, a read ahead of it
 * waits up to {@value #ORDER_WAIT_MS} ms for the reads before it (readahead asks for several chunks at once,
 * in any order) and then decodes and drops the bytes in between, and a read behind it restarts the decode
 * from the start of the object. Every chunk is staged once read, so re-reads and readers behind one another
 * are served from staging; random access to a compressed file costs a decode from its start per miss.
 */
public final class DecompressedStore implements ObjectStore {

    private static final Logger LOG = LoggerFactory.getLogger(DecompressedStore.class);

    static final String SIZE_METADATA = "uncompressed-size";
    private static final int MAX_CURSORS = 8;
    private static final long ORDER_WAIT_MS = 200;
    /** Compressed bytes per GET; a cursor holds two such buffers (one being decoded, one being fetched). */
    private static final int WINDOW = 4 << 20;
    private static final int SIZING_IN_FLIGHT = 32;
    private static final long MAX_REMEMBERED = 1_000_000;

    /** A plain file: the compressed object behind it, its format and its decompressed size. */
    private record View(ObjectSummary compressed, Compression codec, long size) {
    }

    /** The decode of one object version, positioned at {@code position}; guarded by {@code lock}. */
    private static final class Cursor {
        final View view;
        final ReentrantLock lock = new ReentrantLock();
        final Condition advanced = lock.newCondition();
        InputStream decoded;
        long position;

        Cursor(View view) {
            this.view = view;
        }

        void close() {
            if (decoded != null) {
                try {
                    decoded.close();
                } catch (IOException e) {
                    // nothing held but buffers
                }
                decoded = null;
            }
        }
    }

    private final ObjectStore store;
    private final Cache<String, View> views = Caffeine.newBuilder().maximumSize(MAX_REMEMBERED).build();
    /** Decompressed size by compressed key and ETag; -1 for one that cannot be sized. */
    private final Cache<String, Long> sizes = Caffeine.newBuilder().maximumSize(MAX_REMEMBERED).build();
    /** Prefixes listed through this store: a key under one that is not a view is the bucket's own. */
    private final Cache<String, Boolean> listed = Caffeine.newBuilder().maximumSize(MAX_REMEMBERED).build();
    private final Cache<String, Cursor> cursors = Caffeine.newBuilder()
            .maximumSize(MAX_CURSORS)
            .removalListener((String key, Cursor cursor, RemovalCause cause) -> {
                if (cursor != null) {
                    cursor.lock.lock();
                    try {
                        cursor.close();
                    } finally {
                        cursor.lock.unlock();
                    }
                }
            })
            .build();
    /** Sizing requests at listing, and the compressed windows fetched ahead of the decoders. */
    private final ExecutorService sizing = Executors.newVirtualThreadPerTaskExecutor();
    private final Semaphore sizingSlots = new Semaphore(SIZING_IN_FLIGHT);
    private final Set<String> warned = ConcurrentHashMap.newKeySet();
    private final LongAdder sized = new LongAdder();
    private final LongAdder unsized = new LongAdder();
    private final LongAdder restarts = new LongAdder();
    private final LongAdder corrupt = new LongAdder();

    public DecompressedStore(ObjectStore store) {
        this.store = store;
    }

    /** The store whose objects this one shows decompressed. */
    ObjectStore inner() {
        return store;
    }

    /** Counters for the stats: objects sized and not, decodes restarted from the start, corrupt streams. */
    public Map<String, Object> stats() {
        return Map.of("sized", sized.sum(), "unsized", unsized.sum(), "restarts", restarts.sum(), "corrupt", corrupt.sum());
    }

    @Override
    public Listing list(String prefix) {
        Listing listing = store.list(prefix);
        Set<String> taken = new HashSet<>();
        listing.objects().forEach(o -> taken.add(o.key()));
        listing.commonPrefixes().forEach(p -> taken.add(p.substring(0, p.length() - 1)));
        Map<ObjectSummary, CompletableFuture<Long>> pending = new HashMap<>();
        for (ObjectSummary object : listing.objects()) {
            Compression codec = Compression.of(object.key());
            if (codec == null || object.key().length() - prefix.length() <= codec.suffix().length()) {
                continue;
            }
            String plain = object.key().substring(0, object.key().length() - codec.suffix().length());
            if (taken.contains(plain)) {
                if (warned.add(plain)) {
                    LOG.warn("'{}' is not shown decompressed as '{}': the bucket has that name already", object.key(), plain);
                }
                continue;
            }
            pending.put(object, sizeOf(object, codec));
        }
        List<ObjectSummary> objects = new ArrayList<>(listing.objects());
        pending.forEach((object, size) -> {
            long bytes;
            try {
                bytes = size.join();
            } catch (java.util.concurrent.CompletionException e) {
                throw e.getCause() instanceof RuntimeException r ? r : e;
            }
            if (bytes >= 0) {
                Compression codec = Compression.of(object.key());
                String plain = object.key().substring(0, object.key().length() - codec.suffix().length());
                views.put(plain, new View(object, codec, bytes));
                objects.add(new ObjectSummary(plain, bytes, object.etag(), object.lastModifiedMillis()));
            }
        });
        listed.put(prefix, Boolean.TRUE);
        return pending.isEmpty() ? listing : new Listing(listing.prefix(), objects, listing.commonPrefixes());
    }

    /** The decompressed size of {@code object}, -1 if it cannot be known without decoding; a failed request fails the listing. */
    private CompletableFuture<Long> sizeOf(ObjectSummary object, Compression codec) {
        String cacheKey = object.key() + '\n' + object.etag();
        Long known = sizes.getIfPresent(cacheKey);
        if (known != null) {
            return CompletableFuture.completedFuture(known);
        }
        return CompletableFuture.supplyAsync(() -> {
            sizingSlots.acquireUninterruptibly();
            try {
                long size = statedSize(object, codec);
                sizes.put(cacheKey, size);
                (size >= 0 ? sized : unsized).increment();
                if (size < 0 && warned.add(object.key())) {
                    LOG.warn("'{}' is not shown decompressed: it does not state its size; set x-amz-meta-{} on it", object.key(), SIZE_METADATA);
                }
                return size;
            } finally {
                sizingSlots.release();
            }
        }, sizing);
    }

    private long statedSize(ObjectSummary object, Compression codec) {
        long stated;
        try {
            stated = object.size() == 0 ? -1 : codec.statedSize(source(object), object.size());
        } catch (IOException e) {
            throw new StoreException(StoreException.Kind.UNAVAILABLE, "sizing " + object.key() + ": " + e.getMessage(), e);
        }
        // gzip's ISIZE is the size modulo 2^32 (and a zstd frame may omit its size): the metadata, when set, wins
        if (stated < 0 || codec == Compression.GZIP) {
            String metadata = store.userMetadata(object.key()).get(SIZE_METADATA);
            if (metadata != null) {
                try {
                    long size = Long.parseLong(metadata.trim());
                    if (size >= 0) {
                        return size;
                    }
                } catch (NumberFormatException e) {
                    // not a size: fall back to what the format states
                }
            }
        }
        return stated;
    }

    private RangeSource source(ObjectSummary object) {
        return StoreRangeSource.of(store, object.key(), object.etag());
    }

    @Override
    public void get(String key, long offset, long length, String etag, BodyReader reader) {
        View view = view(key);
        if (view == null) {
            store.get(key, offset, length, etag, reader);
            return;
        }
        if (!view.compressed().etag().equals(etag)) {
            throw new StoreException(StoreException.Kind.CHANGED, view.compressed().key() + " changed since " + key + " was opened", null);
        }
        Cursor cursor = cursors.get(view.compressed().key() + '\n' + etag, k -> new Cursor(view));
        cursor.lock.lock();
        try {
            decode(cursor, key, offset, length, reader);
        } catch (IOException e) {
            cursor.close();
            corrupt.increment();
            throw new StoreException(StoreException.Kind.PROTOCOL, "cannot decompress " + view.compressed().key() + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            cursor.close();
            Thread.currentThread().interrupt();
            throw new StoreException(StoreException.Kind.UNAVAILABLE, "interrupted decoding " + view.compressed().key(), e);
        } catch (RuntimeException e) {
            cursor.close();
            throw e;
        } finally {
            cursor.advanced.signalAll();
            cursor.lock.unlock();
        }
    }

    private void decode(Cursor cursor, String key, long offset, long length, BodyReader reader)
            throws IOException, InterruptedException {
        long waitUntil = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ORDER_WAIT_MS);
        while (offset > cursor.position) {
            long left = waitUntil - System.nanoTime();
            if (left <= 0) {
                break;
            }
            cursor.advanced.awaitNanos(left);
        }
        if (cursor.decoded == null || offset < cursor.position) {
            if (cursor.decoded != null) {
                restarts.increment();
            }
            cursor.close();
            View view = cursor.view;
            cursor.decoded = view.codec().decoder(new RangeInputStream(source(view.compressed()), view.compressed().size(), WINDOW, sizing));
            cursor.position = 0;
        }
        try {
            cursor.decoded.skipNBytes(offset - cursor.position);
            cursor.position = offset;
            reader.read(BoundedInputStream.builder().setInputStream(cursor.decoded).setMaxCount(length).setPropagateClose(false).get());
        } catch (EOFException e) {
            throw new IOException("decodes to fewer than the " + cursor.view.size() + " bytes its size says (" + key + ")", e);
        }
        cursor.position = offset + length;
        if (cursor.position == cursor.view.size() && cursor.decoded.read() != -1) {
            throw new IOException("decodes to more than the " + cursor.view.size() + " bytes its size says (" + key + ")");
        }
    }

    /** Whether {@code key} is a decompressed view (known from its directory's listing). */
    @Override
    public boolean decodes(String key) {
        return views.getIfPresent(key) != null;
    }

    /** The view {@code key} names, listing its directory if this store has not; null for a key of the bucket's own. */
    private View view(String key) {
        View view = views.getIfPresent(key);
        if (view != null) {
            return view;
        }
        String parent = key.substring(0, key.lastIndexOf('/') + 1);
        if (listed.getIfPresent(parent) != null) {
            return null;
        }
        list(parent);
        return views.getIfPresent(key);
    }

    @Override
    public void probe(String prefix) {
        store.probe(prefix);
    }

    @Override
    public Map<String, String> userMetadata(String key) {
        return store.userMetadata(key);
    }

    @Override
    public String bucket() {
        return store.bucket();
    }

    @Override
    public void close() {
        sizing.shutdownNow();
        cursors.invalidateAll();
        store.close();
    }
}
