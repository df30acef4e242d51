package io.os2g.staging;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.util.function.LongConsumer;

/**
 * Pages set aside for one chunk while it is fetched. The fetcher fills them ({@link #fill}), then
 * either publishes them into the index or cancels; either way, exactly once. Published early
 * ({@link #publishEarly}), readers see the bytes as they arrive, not only once all have.
 */
public final class Reservation {

    private final ExtentIndex index;
    private final int length;
    private final int[] pages;
    private boolean done;
    /** Set by {@link #publishEarly}: the chunk readers already find, and who hears of its progress. */
    private ExtentIndex.Entry early;
    private LongConsumer progress;
    /** Bytes from the start readers have been told are filled (a retried body starts again below it). */
    private int visible;

    /** Whether the pages hold a part of an upload (never published) rather than a chunk being fetched. */
    private final boolean upload;

    Reservation(ExtentIndex index, int length, int[] pages, boolean upload) {
        this.index = index;
        this.length = length;
        this.pages = pages;
        this.upload = upload;
    }

    public int length() {
        return length;
    }

    /** The page numbers, in order: where another process writes or reads the reserved bytes ({@link StagingView#writePages}). */
    public int[] pages() {
        return pages.clone();
    }

    /** Sends {@code length} bytes from {@code offset} of the reservation to {@code channel} (a socket), with no copy here. */
    public void transferTo(long offset, long length, java.nio.channels.WritableByteChannel channel) throws IOException {
        index.region().transferTo(pages, offset, length, channel);
    }

    /** Copies {@code target.byteSize()} bytes from {@code offset} of the reservation into {@code target}. */
    public void copyOut(long offset, MemorySegment target) {
        index.region().copyOut(pages, offset, target);
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
        if (in instanceof ReadableByteChannel channel) {
            // more than a page per read(2): fewer calls for the same bytes (docs/PERFORMANCE.md)
            MemorySegment buffer = FillBufferPool.SHARED.take();
            try {
                ByteBuffer window = buffer.asByteBuffer();
                fill(want -> Math.max(0, channel.read(window.clear().limit(want))), buffer);
            } finally {
                FillBufferPool.SHARED.giveBack(buffer);
            }
        } else {
            // a page: a stream (a decoder, a tar member, OkHttp's body) reads its socket through
            // buffers of its own, so a larger array here would buy no fewer system calls
            byte[] buffer = new byte[Math.min(index.region().pageSize(), Math.max(length, 1))];
            fill(want -> in.readNBytes(buffer, 0, want), MemorySegment.ofArray(buffer));
        }
        if (in.read() >= 0) {
            throw new IOException("body longer than requested: expected=" + length);
        }
    }

    /** Reads exactly {@code length} bytes from {@code from} into the start of the pages (bytes posted from another machine). */
    public void receive(long length, ReadableByteChannel from) throws IOException {
        if (length > (long) pages.length * index.pageSize()) {
            throw new IndexOutOfBoundsException("posted " + length + " bytes into " + pages.length + " pages");
        }
        index.region().receive(pages, length, from);
    }

    /** Reads up to {@code want} bytes (at least one) into the start of the fill buffer; 0 at the end of the body. */
    private interface Source {
        int read(int want) throws IOException;
    }

    private void fill(Source source, MemorySegment buffer) throws IOException {
        long filled = 0;
        while (filled < length) {
            int n = source.read((int) Math.min(buffer.byteSize(), length - filled));
            if (n == 0) {
                throw new EOFException("body ended early: expected=" + length + ", got=" + filled);
            }
            write(filled, buffer.asSlice(0, n));
            filled += n;
            // the last bytes only with publish, after the body is checked for trailing bytes
            if (early != null && filled > visible && filled < length) {
                visible = (int) filled;
                index.filled(early, visible);
                progress.accept(filled);
            }
        }
    }

    /** Writes {@code bytes} at {@code offset} of the reservation: one write per run of adjacent pages. */
    private void write(long offset, MemorySegment bytes) {
        index.region().copyIn(pages, offset, bytes);
    }

    /**
     * Makes the pages findable as chunk {@code key} at version {@code etag} before they are filled:
     * readers may read the bytes {@link #fill} has written so far, and {@code progress} hears how many
     * that is after each write. {@link #publish} or {@link #cancel} ends it as usual.
     *
     * @throws StagingException when the chunk has no free slot (the pages stay reserved: cancel them)
     */
    public void publishEarly(ChunkKey key, String etag, LongConsumer progress) {
        if (upload) {
            throw new IllegalStateException("upload pages are never published");
        }
        if (done || early != null) {
            throw new IllegalStateException("reservation already published");
        }
        this.early = index.publishFilling(key, etag, length, pages);
        this.progress = progress;
    }

    /** Makes the filled pages the staged bytes of {@code key} at version {@code etag}. */
    public void publish(ChunkKey key, String etag) {
        if (upload) {
            throw new IllegalStateException("upload pages are never published");
        }
        markDone();
        if (early != null) {
            index.finishFilling(early, length);
        } else {
            index.publish(key, etag, length, pages);
        }
    }

    /** Gives the pages back unused (the fetch failed); readers of bytes published early keep them until they let go. */
    public void cancel() {
        if (!done) {
            markDone();
            if (early != null) {
                index.abandonFilling(early);
            } else {
                index.cancel(pages, upload);
            }
        }
    }

    private void markDone() {
        if (done) {
            throw new IllegalStateException("reservation already published or cancelled");
        }
        done = true;
    }
}
