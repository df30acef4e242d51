package io.os2g.agent;

/**
 * How far ahead of one reader to stage. The shim reports a read when it misses or when it first
 * enters a chunk, so the window sees at most one report per chunk. A report near the frontier (the
 * furthest byte read so far) is sequential: the kernel's readahead sends reads slightly out of order
 * and from several threads, so "near" reaches a chunk plus the window on either side. A sequential
 * report that moves the frontier doubles the window up to the cap; any other report (a jump, a seek
 * far back) resets it. Not thread-safe: one per handle, used under its lock.
 */
final class ReadaheadWindow {

    private final long initial;
    private final long max;
    private final long chunkSize;
    private long window;
    private long frontier = -1;

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
        long end = offset + length;
        if (frontier < 0) {
            frontier = end;
        } else if (Math.abs(offset - frontier) <= chunkSize + window) {
            if (end > frontier) {
                window = Math.min(window * 2, max);
                frontier = end;
            }
        } else {
            window = initial;
            frontier = end;
        }
        return Math.max(frontier, end) + window;
    }

    long window() {
        return window;
    }
}
