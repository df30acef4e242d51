package io.os2g.staging;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * What a reader needs of a staging region: find a staged chunk, pin it, copy from it, let it go.
 * Lock-free, and the same in the agent's process and in a shim that {@link #attach}es to an agent's
 * region from another process: both go through the shared extent table, so a hit costs no message.
 */
public final class StagingView implements AutoCloseable {

    private final StagingRegion region;
    private final ExtentTable table;
    private final boolean owned;

    StagingView(StagingRegion region, ExtentTable table, boolean owned) {
        this.region = region;
        this.table = table;
        this.owned = owned;
    }

    /** Maps the segments and extent table an agent created in {@code config.directory()}, for reading. */
    public static StagingView attach(StagingConfig config) {
        return attach(config, false);
    }

    /**
     * As {@link #attach(StagingConfig)}; {@code writable} also opens the segments for writing, for a shim
     * whose mount writes files through pages the agent reserves ({@link #writePages}).
     */
    public static StagingView attach(StagingConfig config, boolean writable) {
        StagingRegion region = StagingRegion.attach(config, writable);
        try {
            return new StagingView(region, ExtentTable.attach(config.directory(), region.arena()), true);
        } catch (IOException | RuntimeException e) {
            region.close();
            throw new StagingException("cannot map the agent's staging region in " + config.directory() + ": " + e.getMessage(), e);
        }
    }

    /** The chunk for {@code key} at version {@code etag}, pinned; null when it is not staged whole. */
    public StagedChunk acquire(ChunkKey key, String etag) {
        return acquire(key, etag, Integer.MAX_VALUE);
    }

    /**
     * The chunk for {@code key} at version {@code etag}, pinned, if at least its first {@code needed}
     * bytes are filled (or all of it, when it is shorter); null otherwise. A chunk still being fetched
     * is readable up to what has arrived: only those bytes of it may be read.
     */
    public StagedChunk acquire(ChunkKey key, String etag, long needed) {
        int slot = table.pin(key.inode(), key.index(), ExtentTable.etagHash(etag));
        if (slot < 0) {
            return null;
        }
        int length = table.length(slot);
        if (table.filled(slot) < Math.min(needed, length)) {
            table.unpin(slot);
            return null;
        }
        return new StagedChunk(slot, length);
    }

    /** Whether {@code key} at {@code etag} is staged whole now (the answer may change at once). */
    public boolean contains(ChunkKey key, String etag) {
        StagedChunk chunk = acquire(key, etag);
        if (chunk == null) {
            return false;
        }
        release(chunk);
        return true;
    }

    /**
     * Copies bytes of a pinned chunk into {@code target}: one pread per run of pages that lie side by
     * side in a segment (a young region's chunks are one run).
     */
    public void copyOut(StagedChunk chunk, long offset, MemorySegment target, long targetOffset, long length) {
        forEachRun(chunk, offset, length, (page, within, done, n) -> {
            region.copyFromPages(page, within, target, targetOffset + done, n);
            return true;
        });
    }

    /**
     * Moves bytes of a pinned chunk into the pipe {@code pipe} by reference (splice), one call per run
     * of pages. The pipe refers to the pages, not to a copy: keep the pin until the pipe's bytes are
     * consumed, or they may be another chunk's by then (see {@link StagingRegion}). Returns false when
     * the pipe filled up first (the bytes moved so far stay in it).
     */
    public boolean spliceOut(StagedChunk chunk, long offset, int pipe, long length) {
        return forEachRun(chunk, offset, length, (page, within, done, n) -> region.spliceFromPages(page, within, pipe, n) == n);
    }

    /**
     * Where a pinned chunk's bytes lie, in chunk order: one extent per run of pages side by side in a
     * segment. Valid while the chunk stays pinned.
     */
    public List<Extent> extents(StagedChunk chunk) {
        List<Extent> extents = new ArrayList<>();
        forEachRun(chunk, 0, chunk.length(), (page, within, done, n) ->
                extents.add(new Extent(region.segmentFile(page), region.offsetInSegment(page) + within, n)));
        return extents;
    }

    /** What is done with one run of pages: {@code n} bytes from {@code within} page {@code page}, {@code done} bytes in. */
    private interface Run {
        boolean take(int page, long within, long done, long n);
    }

    /** Walks {@code [offset, offset + length)} of a chunk run by run; stops early when a run says false. */
    private boolean forEachRun(StagedChunk chunk, long offset, long length, Run run) {
        if (offset < 0 || offset + length > chunk.length()) {
            throw new IndexOutOfBoundsException("outside chunk: offset=" + offset + ", length=" + length
                    + ", chunkLength=" + chunk.length());
        }
        int pageSize = region.pageSize();
        int index = (int) (offset / pageSize);
        long within = offset % pageSize;
        long done = 0;
        while (done < length) {
            int first = table.page(chunk.slot(), index++);
            long n = Math.min(length - done, pageSize - within);
            for (int last = first; done + n < length && region.adjacent(last, table.page(chunk.slot(), index)); last++, index++) {
                n += Math.min(length - done - n, pageSize);
            }
            if (!run.take(first, within, done, n)) {
                return false;
            }
            done += n;
            within = 0;
        }
        return true;
    }

    /**
     * Copies {@code bytes} to {@code offset} of reserved pages (a file written through the mount: the
     * agent reserved them for one part of its upload). Page {@code i} of {@code pages} holds bytes
     * {@code [i * pageSize, (i + 1) * pageSize)} of the part.
     */
    public void writePages(int[] pages, long offset, MemorySegment bytes) {
        for (int page : pages) {
            if (page < 0 || page >= region.pageCount()) {
                throw new IndexOutOfBoundsException("no page " + page + " in a region of " + region.pageCount());
            }
        }
        region.copyIn(pages, offset, bytes);
    }

    /** Bytes the region holds: staged, in flight and free together. */
    public long capacity() {
        return region.config().capacity();
    }

    public void release(StagedChunk chunk) {
        table.unpin(chunk.slot());
    }

    /** Unmaps an attached region (the agent's own view is closed with its region). */
    @Override
    public void close() {
        if (owned) {
            region.close();
        }
    }
}
