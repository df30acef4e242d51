package io.os2g.staging;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * A chunk whose bytes sit in the staging region: its pages, the ETag they came from, and a pin count.
 * A pin count of -1 means dead: evicted or replaced, its pages possibly reused. Pinning fails on a dead
 * chunk, and eviction kills only an unpinned one (one CAS 0 -> -1), so a pinned chunk's pages are
 * never handed to another chunk while a reader copies from them.
 */
public final class StagedChunk {

    private final ChunkKey key;
    private final String etag;
    private final int length;
    private final int[] pages;
    private final AtomicInteger pins = new AtomicInteger();
    /** Read since the last CLOCK sweep passed it: the sweep spares it once. */
    volatile boolean referenced;

    StagedChunk(ChunkKey key, String etag, int length, int[] pages) {
        this.key = key;
        this.etag = etag;
        this.length = length;
        this.pages = pages;
    }

    public ChunkKey key() {
        return key;
    }

    public String etag() {
        return etag;
    }

    public int length() {
        return length;
    }

    int[] pages() {
        return pages;
    }

    boolean tryPin() {
        for (;;) {
            int p = pins.get();
            if (p < 0) {
                return false;
            }
            if (pins.compareAndSet(p, p + 1)) {
                return true;
            }
        }
    }

    void unpin() {
        int after = pins.decrementAndGet();
        if (after < 0) {
            throw new IllegalStateException("unpin of an unpinned chunk: key=" + key);
        }
    }

    boolean tryKill() {
        return pins.compareAndSet(0, -1);
    }

    boolean dead() {
        return pins.get() < 0;
    }

    int pinCount() {
        return Math.max(0, pins.get());
    }
}
