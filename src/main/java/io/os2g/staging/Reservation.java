package io.os2g.staging;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;

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
     * start when the fetch is retried.
     *
     * @throws EOFException when the stream ends early (a truncated body)
     * @throws StagingException when the file system behind the region has no room for the pages
     */
    public void fill(InputStream in) throws IOException {
        StagingRegion region = index.region();
        int pageSize = region.pageSize();
        byte[] buffer = new byte[Math.min(pageSize, Math.max(length, 1))];
        long remaining = length;
        for (int page : pages) {
            int want = (int) Math.min(pageSize, remaining);
            int filled = 0;
            while (filled < want) {
                int n = in.readNBytes(buffer, 0, Math.min(buffer.length, want - filled));
                if (n == 0) {
                    throw new EOFException("body ended early: expected=" + length + ", got=" + (length - remaining + filled));
                }
                region.copyToPage(page, filled, buffer, 0, n);
                filled += n;
            }
            remaining -= want;
        }
        if (in.read() >= 0) {
            throw new IOException("body longer than requested: expected=" + length);
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
