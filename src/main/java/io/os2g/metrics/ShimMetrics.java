package io.os2g.metrics;

import io.os2g.Errno;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/** The shim's counters of reads and writes; cheap to bump from many FUSE threads at once. */
public final class ShimMetrics {
    private final LongAdder bytesServed = new LongAdder();
    private final LongAdder bytesSpliced = new LongAdder();
    private final LongAdder bytesAnsweredByAgent = new LongAdder();
    private final LongAdder reads = new LongAdder();
    private final LongAdder stagingHits = new LongAdder();
    private final LongAdder stagingMisses = new LongAdder();
    private final ConcurrentHashMap<Integer, LongAdder> errors = new ConcurrentHashMap<>();
    private final LongAdder requestsInFlight = new LongAdder();
    private final LongAdder openFiles = new LongAdder();
    private final LongAdder passthroughOpens = new LongAdder();
    private final LongAdder hintsAccepted = new LongAdder();
    private final LongAdder hintsRejected = new LongAdder();
    private final LongAdder filesWriting = new LongAdder();
    private final LongAdder bytesWritten = new LongAdder();
    private final LongAdder filesPublished = new LongAdder();
    private final LongAdder bytesPublished = new LongAdder();
    private final LongAdder writesAborted = new LongAdder();

    /** Files open for writing, up or down. */
    public void writeOpened(int delta) {
        filesWriting.add(delta);
    }

    public void written(long bytes) {
        bytesWritten.add(bytes);
    }

    /** A written file was published (its object is in the bucket). */
    public void published(long bytes) {
        filesPublished.increment();
        bytesPublished.add(bytes);
    }

    /** A file being written was dropped: its writer was killed, or a write failed. */
    public void writeAborted() {
        writesAborted.increment();
    }

    public long filesWriting() {
        return filesWriting.sum();
    }

    public long bytesWritten() {
        return bytesWritten.sum();
    }

    public long filesPublished() {
        return filesPublished.sum();
    }

    public long bytesPublished() {
        return bytesPublished.sum();
    }

    public long writesAborted() {
        return writesAborted.sum();
    }

    public void served(long bytes) {
        reads.increment();
        bytesServed.add(bytes);
    }

    /** Bytes of {@link #served} that went to the kernel by splice, copied once instead of twice. */
    public void spliced(long bytes) {
        bytesSpliced.add(bytes);
    }

    public long bytesSpliced() {
        return bytesSpliced.sum();
    }

    /** Bytes of {@link #served} that the agent wrote to the kernel itself, on the lent /dev/fuse (split mode). */
    public void answeredByAgent(long bytes) {
        bytesAnsweredByAgent.add(bytes);
    }

    public long bytesAnsweredByAgent() {
        return bytesAnsweredByAgent.sum();
    }

    /** Chunks a read found staged ({@code hits}) and chunks it waited for ({@code misses}). */
    public void staged(int hits, int misses) {
        stagingHits.add(hits);
        stagingMisses.add(misses);
    }

    public void hit() {
        stagingHits.increment();
    }

    public void miss() {
        stagingMisses.increment();
    }

    /** An operation on a file failed with {@code errno} (not counted: lookups of names that do not exist). */
    public void error(int errno) {
        errors.computeIfAbsent(errno, e -> new LongAdder()).increment();
    }

    /** A FUSE request started ({@code +1}) or answered ({@code -1}). */
    public void inFlight(int delta) {
        requestsInFlight.add(delta);
    }

    /** Files open in the mount: +1 per open, -1 per release (which the kernel sends after close(2) returns). */
    public void openFiles(int delta) {
        openFiles.add(delta);
    }

    /** An open the kernel reads from the disk cache's file itself (FUSE passthrough): no READ reaches the shim. */
    public void passthroughOpened() {
        passthroughOpens.increment();
    }

    public long passthroughOpens() {
        return passthroughOpens.sum();
    }

    public long openFiles() {
        return openFiles.sum();
    }

    public long requestsInFlight() {
        return requestsInFlight.sum();
    }

    public long bytesServed() {
        return bytesServed.sum();
    }

    public long reads() {
        return reads.sum();
    }

    public long stagingHits() {
        return stagingHits.sum();
    }

    public long stagingMisses() {
        return stagingMisses.sum();
    }

    public long errors() {
        return errors.values().stream().mapToLong(LongAdder::sum).sum();
    }

    /** Failed operations by errno name ("EIO"), names in order. */
    public Map<String, Long> errorsByErrno() {
        Map<String, Long> byName = new TreeMap<>();
        errors.forEach((errno, count) -> byName.put(Errno.name(errno), count.sum()));
        return byName;
    }

    /** A line written to a hint file named a file of the mount. */
    public void hintAccepted() {
        hintsAccepted.increment();
    }

    /** A line written to a hint file named nothing that can be staged (skipped). */
    public void hintRejected() {
        hintsRejected.increment();
    }

    public long hintsAccepted() {
        return hintsAccepted.sum();
    }

    public long hintsRejected() {
        return hintsRejected.sum();
    }
}
