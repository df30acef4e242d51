package io.os2g.agent;

/**
 * How far ahead of one reader to stage. The shim reports a read when it misses or when it first
 * enters a chunk, so the window sees at most one report per chunk. A report that moves forward by
 * no more than one chunk plus the window is sequential and doubles the window up to the cap; any
 * other report (a seek back, a jump) resets it. Not thread-safe: one per handle, used under its lock.
 */
final class ReadaheadWindow {

    private final long initial;
    private final long max;
    private final long chunkSize;
    private long window;
    private long lastOffset = -1;

    ReadaheadWindow(long initial, long max, long chunkSize) {
        this.initial = initial;
        this.max = max;
        this.chunkSize = chunkSize;
        this.window = initial;
    }

    /**
     * Records a read of {@code [offset, offset + length)} and returns the end (exclusive) of the range
     * that should be staged now.
     */
    long onRead(long offset, long length) {
        if (lastOffset >= 0 && offset >= lastOffset && offset - lastOffset <= chunkSize + window) {
            window = Math.min(window * 2, max);
        } else if (lastOffset >= 0) {
            window = initial;
        }
        lastOffset = offset;
        return offset + length + window;
    }

    long window() {
        return window;
    }
}
