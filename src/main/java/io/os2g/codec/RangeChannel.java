package io.os2g.codec;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.NonWritableChannelException;
import java.nio.channels.SeekableByteChannel;
import java.util.ArrayList;
import java.util.List;

/**
 * A read-only channel over a {@link RangeSource} that fetches a window around each read it cannot answer
 * from the last window, so that walking the headers of a tar costs a few large reads when its members are
 * small and one small read per header when they are large.
 *
 * <p>The window adapts to the average distance between the reads so far (in a tar: the member span):
 * while it is under {@value #LARGE_SPAN} bytes a window holds about {@value #HEADERS_PER_WINDOW} of them
 * (at most {@value #MAX_WINDOW} bytes), because one GET's latency costs more than the member bytes it
 * carries along; past that each header gets its own {@value #MIN_WINDOW}-byte read. Reads past {@code end}
 * find nothing, but the channel reports a size beyond any position, so that a reader of a truncated
 * archive reaches its last header instead of stopping at the first size check.
 */
final class RangeChannel implements SeekableByteChannel {

    static final int MIN_WINDOW = 64 * 1024;
    static final int MAX_WINDOW = 8 * 1024 * 1024;
    private static final int HEADERS_PER_WINDOW = 32;
    private static final int RECORD = 512;
    /** About one GET's latency times a connection's bandwidth (10 ms x 200 MB/s). */
    private static final long LARGE_SPAN = 2 * 1024 * 1024;

    /** A read of the object that failed: the walk must fail with it, not take it for a corrupt archive. */
    static final class SourceException extends IOException {
        SourceException(Throwable cause) {
            super(cause);
        }
    }

    private final RangeSource source;
    private final List<Long> headerPositions = new ArrayList<>();
    private final long end;
    private long position;
    private byte[] window = new byte[0];
    private long windowStart;
    private int windowLength;
    private long windowsFetched;
    private long reads;
    private long firstReadPosition;
    private boolean open = true;

    /** @param end the object's size: nothing is read from or beyond it */
    RangeChannel(RangeSource source, long end) {
        this.source = source;
        this.end = end;
    }

    /** Where each read of one whole 512-byte record started: the headers a tar reader read, in order. */
    List<Long> headerPositions() {
        return headerPositions;
    }

    /** Ranged reads made so far. */
    long windowsFetched() {
        return windowsFetched;
    }

    @Override
    public int read(ByteBuffer dst) throws IOException {
        if (position >= end) {
            return -1;
        }
        if (reads++ == 0) {
            firstReadPosition = position;
        }
        if (dst.remaining() == RECORD && position % RECORD == 0) {
            headerPositions.add(position);
        }
        int total = 0;
        while (dst.hasRemaining() && position < end) {
            if (position < windowStart || position >= windowStart + windowLength) {
                fetchWindowAt(position);
            }
            int inWindow = (int) (position - windowStart);
            int n = Math.min(dst.remaining(), windowLength - inWindow);
            dst.put(window, inWindow, n);
            position += n;
            total += n;
        }
        return total;
    }

    private void fetchWindowAt(long at) throws IOException {
        long averageSpan = reads > 1 ? (at - firstReadPosition) / (reads - 1) : 0;
        long wanted = averageSpan > LARGE_SPAN ? MIN_WINDOW : Math.clamp(averageSpan * HEADERS_PER_WINDOW, MIN_WINDOW, MAX_WINDOW);
        int length = (int) Math.min(wanted, end - at);
        if (window.length < length) {
            window = new byte[length];
        }
        try {
            source.read(at, window, 0, length);
        } catch (IOException | RuntimeException e) {
            windowLength = 0;
            throw new SourceException(e);
        }
        windowStart = at;
        windowLength = length;
        windowsFetched++;
    }

    @Override
    public long position() {
        return position;
    }

    @Override
    public SeekableByteChannel position(long newPosition) {
        if (newPosition < 0) {
            throw new IllegalArgumentException("negative position " + newPosition);
        }
        position = newPosition;
        return this;
    }

    @Override
    public long size() {
        return Long.MAX_VALUE / 2;
    }

    @Override
    public int write(ByteBuffer src) {
        throw new NonWritableChannelException();
    }

    @Override
    public SeekableByteChannel truncate(long size) {
        throw new NonWritableChannelException();
    }

    @Override
    public boolean isOpen() {
        return open;
    }

    @Override
    public void close() {
        open = false;
    }
}
