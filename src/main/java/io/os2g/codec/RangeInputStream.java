package io.os2g.codec;

import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;

/**
 * The bytes of an object, start to end, read through a {@link RangeSource} one window at a time, each its
 * own bounded request (a long decode is not one long-lived GET that a deadline cuts). The next window is
 * fetched while the current one is consumed, so a decoder reading this stream overlaps its CPU with the
 * network round trips. Two window buffers are allocated once and alternate.
 */
public final class RangeInputStream extends InputStream {

    private final RangeSource source;
    private final long size;
    private final int windowSize;
    private final Executor executor;
    private byte[] window;
    private byte[] spare;
    private long windowStart;
    private int windowLength;
    private int cursor;
    private CompletableFuture<Integer> next;

    /** @param executor where the window after the current one is fetched */
    public RangeInputStream(RangeSource source, long size, int windowSize, Executor executor) {
        this.source = source;
        this.size = size;
        this.windowSize = (int) Math.max(1, Math.min(windowSize, size));
        this.executor = executor;
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] target, int offset, int length) throws IOException {
        if (length == 0) {
            return 0;
        }
        if (cursor == windowLength) {
            long start = windowStart + windowLength;
            if (start >= size) {
                return -1;
            }
            if (window == null) {
                window = new byte[windowSize];
                spare = new byte[windowSize];
            }
            if (next != null) {
                // the fetch ahead filled the spare buffer; the one just consumed becomes the spare
                windowLength = await(next);
                byte[] filled = spare;
                spare = window;
                window = filled;
            } else {
                windowLength = fetch(start, window);
            }
            windowStart = start;
            cursor = 0;
            long following = start + windowLength;
            byte[] into = spare;
            next = following < size ? CompletableFuture.supplyAsync(() -> {
                try {
                    return fetch(following, into);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }, executor) : null;
        }
        int n = Math.min(length, windowLength - cursor);
        System.arraycopy(window, cursor, target, offset, n);
        cursor += n;
        return n;
    }

    /** Reads the window at {@code start} into {@code buffer}; returns its length. */
    private int fetch(long start, byte[] buffer) throws IOException {
        int length = (int) Math.min(windowSize, size - start);
        source.read(start, buffer, 0, length);
        return length;
    }

    private static int await(CompletableFuture<Integer> window) throws IOException {
        try {
            return window.get();
        } catch (InterruptedException e) {
            window.cancel(true);
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted waiting for the next window");
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() instanceof CompletionException c ? c.getCause() : e.getCause();
            if (cause instanceof UncheckedIOException u) {
                throw u.getCause();
            }
            if (cause instanceof RuntimeException r) {
                throw r;
            }
            throw new IOException(cause);
        }
    }

    /** Drops the window being fetched ahead (it may still land in a buffer no longer read). */
    @Override
    public void close() {
        if (next != null) {
            next.cancel(true);
            next = null;
        }
        window = null;
        spare = null;
    }
}
