package io.os2g.host;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.os2g.staging.Extent;
import io.os2g.staging.StagedChunk;
import io.os2g.staging.StagingView;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A whole file staged and pinned, and where its bytes lie: the segment files and offsets a consumer
 * maps to read them in place (or to DMA them to a GPU). The extents stay valid until the lease is
 * closed; the pinned chunks cannot be evicted before.
 */
final class ExtentLease implements AutoCloseable {

    private static final ObjectMapper JSON = new ObjectMapper();

    private final StagingView staging;
    private final List<StagedChunk> chunks;
    private final String description;
    private final AtomicBoolean closed = new AtomicBoolean();

    /** @param chunks the file's chunks in order, each pinned in {@code staging}; the lease owns the pins */
    ExtentLease(StagingView staging, List<StagedChunk> chunks, long size, String etag) {
        this.staging = staging;
        this.chunks = List.copyOf(chunks);
        List<Extent> merged = new ArrayList<>();
        for (StagedChunk chunk : chunks) {
            for (Extent e : staging.extents(chunk)) {
                Extent last = merged.isEmpty() ? null : merged.getLast();
                if (last != null && last.segment().equals(e.segment()) && last.offset() + last.length() == e.offset()) {
                    merged.set(merged.size() - 1, new Extent(last.segment(), last.offset(), last.length() + e.length()));
                } else {
                    merged.add(e);
                }
            }
        }
        List<List<Object>> extents = new ArrayList<>();
        for (Extent e : merged) {
            extents.add(List.of(e.segment().toString(), e.offset(), e.length()));
        }
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("size", size);
        doc.put("etag", etag);
        doc.put("extents", extents);
        try {
            this.description = JSON.writeValueAsString(doc);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * {@code {"size": N, "etag": "...", "extents": [[SEGMENT_FILE, OFFSET, LENGTH], ...]}}, extents in file
     * order. The region reuses pages where they are, so a mapping of the segments (registered with a
     * device or not) stays valid after the lease; the bytes in it are the file's only while it holds.
     */
    String json() {
        return description;
    }

    /** Unpins the chunks; idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        for (StagedChunk chunk : chunks) {
            try {
                staging.release(chunk);
            } catch (IllegalStateException unmapped) {
                // the region went with a lost agent: the pins went with it
            }
        }
    }
}
