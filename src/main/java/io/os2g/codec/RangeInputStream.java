package io.os2g.codec;

import java.io.IOException;
import java.io.InputStream;

/**
 * The bytes of an object, start to end, read through a {@link RangeSource} one window at a time: each window
 * is its own bounded request, so a long decode is not one long-lived GET that a deadline cuts.
 */
public final class RangeInputStream extends InputStream {

    private final RangeSource source;
    private final long size;
    private final byte[] window;
    private long windowStart;
    private int windowLength;
    private int cursor;

    public RangeInputStream(RangeSource source, long size, int windowSize) {
        this.source = source;
        this.size = size;
        this.window = new byte[(int) Math.max(1, Math.min(windowSize, size))];
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
            long next = windowStart + windowLength;
            if (next >= size) {
                return -1;
            }
            int n = (int) Math.min(window.length, size - next);
            source.read(next, window, 0, n);
            windowStart = next;
            windowLength = n;
            cursor = 0;
        }
        int n = Math.min(length, windowLength - cursor);
        System.arraycopy(window, cursor, target, offset, n);
        cursor += n;
        return n;
    }
}
