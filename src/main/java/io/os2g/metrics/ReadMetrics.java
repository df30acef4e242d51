package io.os2g.metrics;

import java.util.concurrent.atomic.LongAdder;

/** The shim's read counters; cheap to bump from many FUSE threads at once. */
public final class ReadMetrics {
    private final LongAdder bytesServed = new LongAdder();
    private final LongAdder reads = new LongAdder();
    private final LongAdder stagingHits = new LongAdder();
    private final LongAdder stagingMisses = new LongAdder();
    private final LongAdder errors = new LongAdder();
    private final LongAdder hintsAccepted = new LongAdder();
    private final LongAdder hintsRejected = new LongAdder();

    public void served(long bytes) {
        reads.increment();
        bytesServed.add(bytes);
    }

    public void hit() {
        stagingHits.increment();
    }

    public void miss() {
        stagingMisses.increment();
    }

    public void error() {
        errors.increment();
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
        return errors.sum();
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
