package io.os2g.agent;

import io.os2g.Errno;
import io.os2g.staging.ExtentIndex;
import io.os2g.staging.Reservation;
import io.os2g.staging.ReservedPages;
import io.os2g.store.ObjectSummary;
import io.os2g.store.ObjectUploads;
import io.os2g.store.StoreException;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.WritableByteChannel;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Files written through the mount, uploaded from the staging region, and the other changes a mount
 * makes to its bucket (deletes, renames). The writer fills a part's pages
 * ({@link #nextPart}), says it is full ({@link #partWritten}), and the part is uploaded in the
 * background while the writer fills the next. A file of one part is one PUT at {@link #finish}; a
 * larger one a multipart upload, started with its first full part and completed at finish.
 *
 * <p>Memory stays bounded: parts hold their staging pages until they are in the store, at most half
 * the region in all, and are streamed from them ({@link #PARTS_IN_FLIGHT} at a time), never copied
 * whole to the heap. A slow store therefore makes {@link #nextPart} wait (back-pressure on the
 * writer), never fail, until the store's own retries give up: then the upload is aborted and every
 * later call is EIO.
 */
public final class Uploads implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(Uploads.class);

    /** The first parts' size; it doubles every {@link #PARTS_PER_SIZE} parts so that 10,000 reach multi-TB files. */
    public static final int FIRST_PART_SIZE = 8 << 20;
    static final int PARTS_PER_SIZE = 1000;
    /** S3's limit on the parts of one upload. */
    public static final int MAX_PARTS = 10_000;
    /** S3's limit on one part. */
    private static final long MAX_PART_SIZE = 5L << 30;
    /** Part uploads running at once over all files. */
    static final int PARTS_IN_FLIGHT = 8;
    /** How much of a part is copied from staging to a stream at a time (where it is not sent from the files). */
    private static final int COPY_BUFFER = 256 << 10;
    /** An abort that failed for an outage is tried again after 1 s, doubling to a minute, for about an hour. */
    static final Duration ABORT_RETRY_FIRST_DELAY = Duration.ofSeconds(1);
    static final Duration ABORT_RETRY_MAX_DELAY = Duration.ofMinutes(1);
    static final int ABORT_ATTEMPTS = 66;

    private final ObjectUploads store;
    private final String prefix;
    private final AgentPolicy policy;
    /** Keys this session published: moving one away needs no delete permission (a checkpoint's rename into place). */
    private final java.util.Set<String> writtenHere = ConcurrentHashMap.newKeySet();
    private final ExtentIndex index;
    private final Duration waitForRoom;
    private final int largestPart;
    /** Pages of parts not yet taken by an upload slot, at most half the region. */
    private final Semaphore stagedPages;
    private final ExecutorService uploaders = Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("os2g-upload-", 0).factory());
    /**
     * The threads that send parts, {@link #PARTS_IN_FLIGHT} of them: platform threads, so that a part
     * goes from its staging pages to a blocking socket with sendfile (a virtual thread would leave the
     * socket non-blocking, and the bytes would go through a buffer).
     */
    private final ExecutorService partSenders = Executors.newFixedThreadPool(PARTS_IN_FLIGHT,
            Thread.ofPlatform().name("os2g-part-", 0).daemon().factory());
    /** Aborts that failed for an outage wait here for their next try. */
    private final java.util.concurrent.ScheduledExecutorService abortRetries = Executors.newSingleThreadScheduledExecutor(
            Thread.ofPlatform().name("os2g-abort-retry").daemon().factory());
    private final ConcurrentHashMap<Long, Upload> uploads = new ConcurrentHashMap<>();
    private final AtomicLong nextHandle = new AtomicLong(1);
    private final LongAdder bytesUploaded = new LongAdder();
    private final LongAdder partsUploaded = new LongAdder();
    private final LongAdder filesPublished = new LongAdder();
    private final LongAdder uploadsAborted = new LongAdder();

    /** One file being written. Its fields other than the futures are guarded by the object's lock. */
    private static final class Upload {
        final String key;
        /** Parts handed to the writer and not written yet, by number. */
        final Map<Integer, Reservation> open = new ConcurrentHashMap<>();
        /** Each written part's upload, by number - 1: its ETag. */
        final List<CompletableFuture<String>> parts = new ArrayList<>();
        /** The multipart upload's id, once its first part is written. */
        CompletableFuture<String> uploadId;
        long bytes;
        volatile Throwable failure;
        boolean ended;
        /** Its multipart upload is aborted, or will be once its parts settle. */
        boolean dropped;
        /** Complete once the store dropped the upload (or could not). */
        final CompletableFuture<Void> droppedInStore = new CompletableFuture<>();

        Upload(String key) {
            this.key = key;
        }
    }

    /**
     * @param waitForRoom how long a writer waits for staging room before its write fails (EIO): at
     *     least as long as a part's upload may take with its retries
     */
    public Uploads(ObjectUploads store, ExtentIndex index, Duration waitForRoom) {
        this(store, index, waitForRoom, "", AgentPolicy.of(true, true, true));
    }

    /**
     * @param prefix the mount's prefix: no key outside it is written, deleted or moved
     * @param policy what the agent allows, whatever the shim asks
     */
    public Uploads(ObjectUploads store, ExtentIndex index, Duration waitForRoom, String prefix, AgentPolicy policy) {
        this.prefix = prefix;
        this.policy = policy;
        this.store = store;
        this.index = index;
        this.waitForRoom = waitForRoom;
        long half = index.capacityBytes() / 2;
        this.largestPart = (int) Math.min(Math.min(MAX_PART_SIZE, Integer.MAX_VALUE - index.pageSize()),
                Math.max(Math.min(FIRST_PART_SIZE, half), Long.highestOneBit(Math.max(1, half / 4))));
        this.stagedPages = new Semaphore((int) Math.max(pages(largestPart), half / index.pageSize()));
    }

    /** The size of part {@code number}: 8 MiB doubling every 1,000 parts, within a quarter of half the region. */
    int partSize(int number) {
        long size = (long) FIRST_PART_SIZE << Math.min(20, (number - 1) / PARTS_PER_SIZE);
        return (int) Math.min(size, largestPart);
    }

    /** The largest file an upload can hold: 10,000 parts of their sizes. */
    public long largestFile() {
        long total = 0;
        for (int n = 1; n <= MAX_PARTS; n++) {
            total += partSize(n);
        }
        return total;
    }

    private int pages(long bytes) {
        return (int) Math.max(1, (bytes + index.pageSize() - 1) / index.pageSize());
    }

    /** Starts a file: nothing is sent to the store until its first part is full or it is finished. */
    public long begin(String key) {
        inScope(key);
        if (!policy.writes()) {
            throw new AgentException(Errno.EROFS, key + ": this agent takes no writes", null);
        }
        if (!policy.overwrite() && store.exists(key)) {
            throw new AgentException(Errno.EPERM, key + " exists, and this agent makes no overwrites", null);
        }
        long handle = nextHandle.getAndIncrement();
        uploads.put(handle, new Upload(key));
        return handle;
    }

    /**
     * Pages for part {@code number} of the file: waits while parts waiting for their upload fill half
     * the region.
     *
     * @throws AgentException EIO when the upload failed or no room came in time; EFBIG past the last part
     */
    public ReservedPages nextPart(long handle, int number) {
        Upload upload = upload(handle);
        failIfFailed(upload);
        if (number < 1 || number > MAX_PARTS) {
            throw new AgentException(Errno.EFBIG, upload.key + ": larger than " + MAX_PARTS + " parts of an upload can hold ("
                    + largestFile() + " bytes with this staging size)", null);
        }
        int size = partSize(number);
        int pages = pages(size);
        try {
            if (!stagedPages.tryAcquire(pages, waitForRoom.toNanos(), TimeUnit.NANOSECONDS)) {
                throw new AgentException(Errno.EIO, upload.key + ": no staging room for part " + number + " within "
                        + waitForRoom.toSeconds() + " s (the store takes no parts?)", null);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AgentException(Errno.EINTR, "interrupted while waiting for staging room", e);
        }
        Reservation reservation;
        try {
            reservation = index.reserveForUpload(size);
        } catch (RuntimeException e) {
            stagedPages.release(pages);
            throw new AgentException(Errno.EIO, upload.key + ": no staging room for part " + number + ": " + e.getMessage(), e);
        }
        Reservation replaced = upload.open.put(number, reservation);
        if (replaced != null) {
            giveBack(replaced);
        }
        return new ReservedPages(number, reservation.pages(), size);
    }

    /**
     * Reads the first {@code length} bytes of part {@code number} from {@code from} into its pages: a
     * shim on another machine posts what it wrote, before it says the part is written.
     *
     * @throws IOException when the bytes end early (the link broke)
     * @throws AgentException EINVAL when the part was not handed out or is smaller
     */
    public void receivePart(long handle, int number, int length, java.nio.channels.ReadableByteChannel from)
            throws java.io.IOException {
        Upload upload = upload(handle);
        Reservation part = upload.open.get(number);
        if (part == null || length < 0 || length > part.length()) {
            throw new AgentException(Errno.EINVAL, upload.key + ": part " + number + " was not handed out, or holds "
                    + length + " bytes", null);
        }
        part.receive(length, from);
    }

    /** Part {@code number} holds {@code length} bytes (its whole capacity but for the last part): upload it. */
    public void partWritten(long handle, int number, int length) {
        Upload upload = upload(handle);
        failIfFailed(upload);
        Reservation part = upload.open.remove(number);
        if (part == null || length < 0 || length > part.length()) {
            throw new AgentException(Errno.EINVAL, upload.key + ": part " + number + " was not handed out, or holds "
                    + length + " bytes", null);
        }
        synchronized (upload) {
            if (upload.ended) {
                giveBack(part);
                throw new AgentException(Errno.EIO, upload.key + ": the upload has ended", null);
            }
            if (number != upload.parts.size() + 1) {
                giveBack(part);
                throw new AgentException(Errno.EINVAL, upload.key + ": part " + number + " written after part " + upload.parts.size(), null);
            }
            if (upload.uploadId == null) {
                upload.uploadId = CompletableFuture.supplyAsync(() -> store.startUpload(upload.key), uploaders);
                upload.uploadId.whenComplete((id, failure) -> {
                    if (failure != null) {
                        upload.failure = failure;
                    }
                });
            }
            upload.bytes += length;
            CompletableFuture<String> uploadId = upload.uploadId;
            upload.parts.add(uploadId.thenApplyAsync(id -> uploadPart(upload, id, number, part, length), partSenders));
        }
    }

    /** Sends a part from its staging pages (on a part sender); the pages go back once it is in the store. */
    private String uploadPart(Upload upload, String uploadId, int number, Reservation part, int length) {
        try {
            if (upload.failure != null) {
                throw new AgentException(Errno.EIO, upload.key + ": the upload failed", upload.failure);
            }
            String etag = store.uploadPart(upload.key, uploadId, number, body(part, length));
            bytesUploaded.add(length);
            partsUploaded.increment();
            return etag;
        } catch (RuntimeException e) {
            upload.failure = e;
            dropInStore(upload); // no part of it will be published: its parts go now, whatever the writer does
            throw e;
        } finally {
            giveBack(part);
        }
    }

    /** The first {@code length} bytes of a part's pages, as the store streams them (again, on a retry). */
    private static ObjectUploads.Body body(Reservation part, int length) {
        return new ObjectUploads.Body() {
            @Override
            public int length() {
                return length;
            }

            @Override
            public void transferTo(WritableByteChannel channel) throws IOException {
                part.transferTo(0, length, channel);
            }

            @Override
            public void writeTo(OutputStream out) throws IOException {
                byte[] buffer = new byte[Math.min(length, COPY_BUFFER)];
                MemorySegment window = MemorySegment.ofArray(buffer);
                for (int at = 0; at < length; at += buffer.length) {
                    int n = Math.min(buffer.length, length - at);
                    part.copyOut(at, window.asSlice(0, n));
                    out.write(buffer, 0, n);
                }
            }
        };
    }

    private void giveBack(Reservation part) {
        part.cancel();
        stagedPages.release(pages(part.length()));
    }

    /**
     * Waits until every part written so far is uploaded (fsync). The object is still not visible: it
     * appears at {@link #finish}.
     *
     * @throws AgentException EIO when a part failed (the upload is then aborted)
     */
    public void flush(long handle) {
        Upload upload = upload(handle);
        List<CompletableFuture<String>> parts;
        synchronized (upload) {
            parts = List.copyOf(upload.parts);
        }
        await(upload, parts);
    }

    /**
     * Uploads the last part ({@code lastPart} with {@code lastLength} bytes, 0 for none handed out) and
     * publishes the object: one PUT for a file of one part, else the multipart upload completed.
     *
     * @throws AgentException EIO when the object could not be published (nothing is left in the store)
     */
    public ObjectSummary finish(long handle, int lastPart, int lastLength) {
        Upload upload = upload(handle);
        try {
            failIfFailed(upload);
            boolean single;
            synchronized (upload) {
                single = upload.uploadId == null;
            }
            if (single) {
                // on a part sender too: the caller may be a virtual thread (see partSenders)
                try {
                    return CompletableFuture.supplyAsync(() -> putWhole(upload, lastPart, lastLength), partSenders).join();
                } catch (java.util.concurrent.CompletionException e) {
                    throw e.getCause() instanceof RuntimeException r ? r : e;
                }
            }
            if (lastPart > 0 && lastLength > 0) {
                partWritten(handle, lastPart, lastLength);
            } else if (lastPart > 0) {
                Reservation empty = upload.open.remove(lastPart);
                if (empty != null) {
                    giveBack(empty);
                }
            }
            List<CompletableFuture<String>> parts;
            long size;
            String uploadId;
            synchronized (upload) {
                upload.ended = true;
                parts = List.copyOf(upload.parts);
                size = upload.bytes;
                uploadId = upload.uploadId.join();
            }
            List<String> etags = await(upload, parts);
            ObjectSummary published = store.completeUpload(upload.key, uploadId, etags, size);
            uploads.remove(handle);
            filesPublished.increment();
            writtenHere.add(upload.key);
            return published;
        } catch (RuntimeException e) {
            abort(handle);
            throw e instanceof AgentException a ? a : new AgentException(Errno.EIO, upload.key + ": upload failed: " + e.getMessage(), e);
        }
    }

    /** A file of at most one part: one PUT from its pages. */
    private ObjectSummary putWhole(Upload upload, int lastPart, int lastLength) {
        Reservation part = lastPart > 0 ? upload.open.remove(lastPart) : null;
        try {
            if (lastPart > 1 || (lastPart == 1 && (part == null || lastLength > part.length()))) {
                throw new AgentException(Errno.EINVAL, upload.key + ": part " + lastPart + " finished without the parts before it", null);
            }
            synchronized (upload) {
                upload.ended = true;
            }
            ObjectSummary published = store.putObject(upload.key, part == null ? EMPTY : body(part, lastLength));
            bytesUploaded.add(lastLength);
            filesPublished.increment();
            writtenHere.add(upload.key);
            uploads.values().remove(upload);
            return published;
        } finally {
            if (part != null) {
                giveBack(part);
            }
        }
    }

    private static final ObjectUploads.Body EMPTY = ObjectUploads.Body.of(new byte[0]);

    /**
     * Drops the file (the writer's side gave up on it): the pages it was handed go back, and the upload
     * is aborted in the store. Nothing is published.
     */
    public void abort(long handle) {
        abortUpload(handle);
    }

    /** {@link #abort}; the future completes once the store has dropped the upload (or could not). */
    private CompletableFuture<Void> abortUpload(long handle) {
        Upload upload = uploads.remove(handle);
        if (upload == null) {
            return CompletableFuture.completedFuture(null);
        }
        if (upload.failure == null) {
            upload.failure = new AgentException(Errno.EIO, upload.key + ": aborted", null);
        }
        upload.open.values().forEach(this::giveBack);
        upload.open.clear();
        return dropInStore(upload);
    }

    /**
     * Aborts the multipart upload once its parts in flight have settled (a part that lands after an
     * abort would stay in the store), once. The pages handed to the writer stay its own until it lets
     * the file go ({@link #abort}): it may be copying into them now.
     */
    private CompletableFuture<Void> dropInStore(Upload upload) {
        List<CompletableFuture<String>> parts;
        CompletableFuture<String> uploadId;
        synchronized (upload) {
            if (upload.dropped) {
                return upload.droppedInStore;
            }
            upload.dropped = true;
            upload.ended = true;
            parts = List.copyOf(upload.parts);
            uploadId = upload.uploadId;
        }
        uploadsAborted.increment();
        if (uploadId == null) {
            upload.droppedInStore.complete(null);
            return upload.droppedInStore;
        }
        CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new)).handle((ignored, failure) -> null)
                .thenCombine(uploadId, (ignored, id) -> id)
                .thenAcceptAsync(id -> abortInStore(upload.key, id, 0), uploaders)
                .whenComplete((ignored, failure) -> upload.droppedInStore.complete(null));
        return upload.droppedInStore;
    }

    /**
     * Aborts a multipart upload in the store; one that fails while the store is unreachable is tried
     * again later, backing off to {@link #ABORT_RETRY_MAX_DELAY}, so that an outage leaves no parts behind.
     */
    private void abortInStore(String key, String uploadId, int attempt) {
        try {
            store.abortUpload(key, uploadId);
            if (attempt > 0) {
                LOG.info("aborted the upload of {} now that the store answers", key);
            }
        } catch (RuntimeException e) {
            boolean outage = e instanceof StoreException se
                    && (se.kind() == StoreException.Kind.UNAVAILABLE || se.kind() == StoreException.Kind.UNREACHABLE);
            if (!outage || attempt >= ABORT_ATTEMPTS || abortRetries.isShutdown()) {
                LOG.warn("could not abort the upload of {} ({}): its parts stay in the store until a lifecycle rule removes them",
                        key, e.getMessage());
                return;
            }
            if (attempt == 0) {
                LOG.warn("could not abort the upload of {} ({}): tried again until the store answers", key, e.getMessage());
            }
            long delay = Math.min(ABORT_RETRY_MAX_DELAY.toMillis(), ABORT_RETRY_FIRST_DELAY.toMillis() << Math.min(attempt, 20));
            try {
                abortRetries.schedule(() -> uploaders.execute(() -> abortInStore(key, uploadId, attempt + 1)), delay, TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.RejectedExecutionException closed) {
                LOG.warn("could not abort the upload of {}: its parts stay in the store until a lifecycle rule removes them", key);
            }
        }
    }

    /** A key the shim names must lie under the mount's prefix, whatever the shim is. */
    private void inScope(String key) {
        if (!key.startsWith(prefix) || key.length() == prefix.length()) {
            throw new AgentException(Errno.EACCES, "key " + key + " is outside the mounted prefix " + prefix, null);
        }
    }

    private List<String> await(Upload upload, List<CompletableFuture<String>> parts) {
        List<String> etags = new ArrayList<>(parts.size());
        for (CompletableFuture<String> part : parts) {
            try {
                etags.add(part.join());
            } catch (RuntimeException e) {
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                upload.failure = cause;
                throw new AgentException(Errno.EIO, upload.key + ": a part could not be uploaded: " + cause.getMessage(), cause);
            }
        }
        return etags;
    }

    private static void failIfFailed(Upload upload) {
        Throwable failure = upload.failure;
        if (failure != null) {
            throw new AgentException(Errno.EIO, upload.key + ": the upload failed: " + failure.getMessage(), failure);
        }
    }

    private Upload upload(long handle) {
        Upload upload = uploads.get(handle);
        if (upload == null) {
            throw new AgentException(Errno.EBADF, "no file being written under handle " + handle, null);
        }
        return upload;
    }

    /** Deletes {@code key} (unlink through the mount). */
    public void delete(String key) {
        inScope(key);
        if (!policy.delete()) {
            throw new AgentException(Errno.EPERM, key + ": this agent makes no deletes", null);
        }
        store.deleteObject(key);
        writtenHere.remove(key);
    }

    /** Moves object {@code from} to {@code to}: a copy in the store, then the delete of {@code from} (rename). */
    public ObjectSummary move(String from, String to, long size) {
        inScope(from);
        inScope(to);
        if (!policy.delete() && !writtenHere.contains(from)) {
            throw new AgentException(Errno.EPERM, from + ": moving it deletes it, and this agent deletes only keys this mount wrote", null);
        }
        if (!policy.overwrite() && store.exists(to)) {
            throw new AgentException(Errno.EPERM, to + " exists, and this agent makes no overwrites", null);
        }
        writtenHere.remove(from);
        writtenHere.add(to);
        ObjectSummary moved = store.copyObject(from, to, size);
        store.deleteObject(from);
        return moved;
    }

    /** Files being written now. */
    public int active() {
        return uploads.size();
    }

    public long bytesUploaded() {
        return bytesUploaded.sum();
    }

    public long partsUploaded() {
        return partsUploaded.sum();
    }

    public long filesPublished() {
        return filesPublished.sum();
    }

    public long uploadsAborted() {
        return uploadsAborted.sum();
    }

    /** Aborts every file still being written (the mount is going away: none of them was closed). */
    @Override
    public void close() {
        List<CompletableFuture<Void>> aborted = new ArrayList<>();
        for (Long handle : List.copyOf(uploads.keySet())) {
            aborted.add(abortUpload(handle));
        }
        try {
            // before the executors and the store go: an upload left in the store is billed until a lifecycle rule
            CompletableFuture.allOf(aborted.toArray(CompletableFuture[]::new)).get(waitForRoom.toNanos(), TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            LOG.warn("uploads still being aborted at unmount: their parts stay in the store until a lifecycle rule removes them");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        abortRetries.shutdownNow();
        partSenders.shutdown();
        uploaders.shutdown();
        try {
            if (!partSenders.awaitTermination(30, TimeUnit.SECONDS) || !uploaders.awaitTermination(30, TimeUnit.SECONDS)) {
                LOG.warn("uploads still running at unmount: their parts stay in the store until a lifecycle rule removes them");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
