package io.os2g.agent;

import java.util.concurrent.TimeUnit;

/**
 * How far ahead of one reader to stage. The shim reports a read when it misses or when it first
 * enters a chunk, so the window sees at most one report per chunk. A report near the frontier (the
 * furthest byte read so far) is sequential: the kernel's readahead sends reads slightly out of order
 * and from several threads, so "near" reaches a chunk plus the window on either side. Any other
 * report (a jump, a seek far back) quarters the window, down to its start: a random reader is back
 * at the start after a few reads, while a reader that jumps between long runs (torch.load reads a
 * checkpoint's tensors in the order of their names, not of the file) does not ramp up from 1 MiB
 * for each run.
 *
 * <p>The window is sized from what it must cover: while the reader reads at {@code rate}, a chunk
 * asked for now arrives one chunk fetch later, so {@code rate x fetch time} bytes must be in flight
 * to keep it from waiting; the window aims at twice that. It starts small (a random reader wastes
 * little), doubles on each sequential report while below that aim or while the rate or the fetch
 * time is not known yet, shrinks to the aim when a slow reader (one that decodes, say) needs much
 * less, and stays within the cap. Not thread-safe: one per handle, used under its lock.
 */
final class ReadaheadWindow {

    /** The reader's rate is measured over spans of at least this long. */
    static final long RATE_SPAN_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    private final long initial;
    private final long max;
    private final long chunkSize;
    private long window;
    private long frontier = -1;
    /** Where the current sequential run began: the first read, or the last jump. */
    private long runStart;
    /** Where and when the current rate span started; the last span's rate, bytes per second (0: unknown). */
    private long spanFrontier;
    private long spanStartNanos;
    private double rate;

    ReadaheadWindow(long initial, long max, long chunkSize) {
        this.initial = initial;
        this.max = max;
        this.chunkSize = chunkSize;
        this.window = initial;
    }

    /**
     * Records a read of {@code [offset, offset + length)} at {@code nowNanos}, while one chunk takes
     * {@code chunkFetchNanos} to fetch (0: not known), and returns the end (exclusive) of the range
     * that should be staged now.
     */
    long onRead(long offset, long length, long nowNanos, long chunkFetchNanos) {
        long end = offset + length;
        if (frontier < 0) {
            frontier = end;
            runStart = offset;
            startSpan(nowNanos);
        } else if (Math.abs(offset - frontier) <= chunkSize + window) {
            if (end > frontier) {
                frontier = end;
                measure(nowNanos);
                long aim = aim(chunkFetchNanos);
                if (window < aim) {
                    window = Math.min(window * 2, max);
                } else if (window > 2 * aim) {
                    window = Math.max(initial, aim);
                }
            }
        } else {
            window = Math.max(initial, window / 4);
            frontier = end;
            runStart = offset;
            rate = 0;
            startSpan(nowNanos);
        }
        return Math.max(frontier, end) + window;
    }

    /** Twice the bytes a fetch's duration at the reader's rate takes; unbounded while either is unknown. */
    private long aim(long chunkFetchNanos) {
        if (rate <= 0 || chunkFetchNanos <= 0) {
            return Long.MAX_VALUE;
        }
        return (long) Math.min(Long.MAX_VALUE / 4, 2 * rate * chunkFetchNanos / 1e9);
    }

    private void measure(long nowNanos) {
        long span = nowNanos - spanStartNanos;
        if (span >= RATE_SPAN_NANOS) {
            rate = (frontier - spanFrontier) * 1e9 / span;
            startSpan(nowNanos);
        }
    }

    private void startSpan(long nowNanos) {
        spanFrontier = frontier;
        spanStartNanos = nowNanos;
    }

    long window() {
        return window;
    }

    /** Where the reader's current sequential run began: what lies between it and the reader is read. */
    long runStart() {
        return runStart;
    }
}
