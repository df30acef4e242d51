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
 * network round trips.
 */
public final class RangeInputStream extends InputStream {

    private final RangeSource source;
    private final long size;
    private final int windowSize;
    private final Executor executor;
    private byte[] window = new byte[0];
    private long windowStart;
    private int windowLength;
    private int cursor;
    private CompletableFuture<byte[]> next;

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
            window = next != null ? await(next) : fetch(start);
            windowStart = start;
            windowLength = window.length;
            cursor = 0;
            long following = start + windowLength;
            next = following < size ? CompletableFuture.supplyAsync(() -> {
                try {
                    return fetch(following);
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

    private byte[] fetch(long start) throws IOException {
        byte[] bytes = new byte[(int) Math.min(windowSize, size - start)];
        source.read(start, bytes, 0, bytes.length);
        return bytes;
    }

    private static byte[] await(CompletableFuture<byte[]> window) throws IOException {
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

    /** Drops the window being fetched ahead. */
    @Override
    public void close() {
        if (next != null) {
            next.cancel(true);
            next = null;
        }
    }
}
