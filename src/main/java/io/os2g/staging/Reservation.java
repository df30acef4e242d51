package io.os2g.staging;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;

/**
 * Pages set aside for one chunk while it is fetched. The fetcher fills them ({@link #fill}), then
 * either publishes them into the index or cancels; either way, exactly once.
 */
public final class Reservation {

    private final ExtentIndex index;
    private final int length;
    private final int[] pages;
    private boolean done;

    Reservation(ExtentIndex index, int length, int[] pages) {
        this.index = index;
        this.length = length;
        this.pages = pages;
    }

    public int length() {
        return length;
    }

    int[] pages() {
        return pages;
    }

    /**
     * Reads exactly {@link #length()} bytes from {@code in} into the pages. Called again from the
     * start when the fetch is retried. A stream that is also a channel (a body read straight from the
     * socket) is read into native memory, with no copy in Java on the way to the pages.
     *
     * @throws EOFException when the stream ends early (a truncated body)
     * @throws StagingException when the file system behind the region has no room for the pages
     */
    public void fill(InputStream in) throws IOException {
        int size = Math.min(index.region().pageSize(), Math.max(length, 1));
        if (in instanceof ReadableByteChannel channel) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment buffer = arena.allocate(size);
                ByteBuffer window = buffer.asByteBuffer();
                fill(want -> Math.max(0, channel.read(window.clear().limit(want))), buffer);
            }
        } else {
            byte[] buffer = new byte[size];
            fill(want -> in.readNBytes(buffer, 0, want), MemorySegment.ofArray(buffer));
        }
        if (in.read() >= 0) {
            throw new IOException("body longer than requested: expected=" + length);
        }
    }

    /** Reads up to {@code want} bytes into the start of the fill buffer; 0 at the end of the body. */
    private interface Source {
        int read(int want) throws IOException;
    }

    private void fill(Source source, MemorySegment buffer) throws IOException {
        StagingRegion region = index.region();
        int pageSize = region.pageSize();
        long remaining = length;
        for (int page : pages) {
            int want = (int) Math.min(pageSize, remaining);
            int filled = 0;
            while (filled < want) {
                int n = source.read((int) Math.min(buffer.byteSize(), want - filled));
                if (n == 0) {
                    throw new EOFException("body ended early: expected=" + length + ", got=" + (length - remaining + filled));
                }
                region.copyToPage(page, filled, buffer.asSlice(0, n));
                filled += n;
            }
            remaining -= want;
        }
    }

    /** Makes the filled pages the staged bytes of {@code key} at version {@code etag}. */
    public void publish(ChunkKey key, String etag) {
        markDone();
        index.publish(key, etag, length, pages);
    }

    /** Gives the pages back unused (the fetch failed). */
    public void cancel() {
        if (!done) {
            markDone();
            index.cancel(pages);
        }
    }

    private void markDone() {
        if (done) {
            throw new IllegalStateException("reservation already published or cancelled");
        }
        done = true;
    }
}
