package io.os2g.agent;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.os2g.Errno;
import io.os2g.namespace.Node;
import io.os2g.staging.ChunkKey;
import io.os2g.staging.ChunkLayout;
import io.os2g.staging.ExtentIndex;
import io.os2g.staging.Reservation;
import io.os2g.store.ObjectStore;
import io.os2g.store.StoreException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
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
    private final Semaphore slots;
    private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
    private final ConcurrentHashMap<ChunkKey, CompletableFuture<Void>> inFlight = new ConcurrentHashMap<>();
    private final LongAdder fetched = new LongAdder();
    private final LongAdder fetchedBytes = new LongAdder();
    private final LongAdder failures = new LongAdder();
    private final Cache<Version, Throwable> recentFailures = Caffeine.newBuilder()
            .expireAfterWrite(FAILURE_MEMORY)
            .maximumSize(4096)
            .build();

    ChunkFetcher(ObjectStore store, ExtentIndex index, ChunkLayout layout, int maxInFlight) {
        this.store = store;
        this.index = index;
        this.layout = layout;
        this.slots = new Semaphore(maxInFlight);
    }

    /** Completes when chunk {@code chunk} of {@code file} is staged, or with the fetch's failure. */
    CompletableFuture<Void> stage(Node.File file, long chunk) {
        ChunkKey key = new ChunkKey(file.inode(), chunk);
        if (index.view().contains(key, file.etag())) {
            return CompletableFuture.completedFuture(null);
        }
        Throwable failed = recentFailures.getIfPresent(new Version(key, file.etag()));
        if (failed != null) {
            return CompletableFuture.failedFuture(failed);
        }
        CompletableFuture<Void> mine = new CompletableFuture<>();
        CompletableFuture<Void> running = inFlight.putIfAbsent(key, mine);
        if (running != null) {
            return running;
        }
        try {
            executor.execute(() -> fetch(file, key, mine));
        } catch (RejectedExecutionException e) {
            inFlight.remove(key, mine);
            mine.completeExceptionally(new AgentException(Errno.EIO, "agent is shutting down", e));
        }
        return mine;
    }

    private void fetch(Node.File file, ChunkKey key, CompletableFuture<Void> done) {
        Reservation reservation = null;
        try {
            slots.acquire();
            try {
                // another reader may have staged it while this one waited for a slot
                if (!index.view().contains(key, file.etag())) {
                    int length = layout.length(file.size(), key.index());
                    reservation = index.reserve(length);
                    Reservation target = reservation;
                    store.read(file.key(), layout.start(key.index()), length, file.etag(), target::fill);
                    target.publish(key, file.etag());
                    reservation = null;
                    fetched.increment();
                    fetchedBytes.add(length);
                }
            } finally {
                slots.release();
            }
            inFlight.remove(key, done);
            done.complete(null);
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
            done.completeExceptionally(t);
        }
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
