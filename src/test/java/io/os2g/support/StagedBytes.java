package io.os2g.support;

import io.os2g.staging.ChunkKey;
import io.os2g.staging.StagedChunk;
import io.os2g.staging.StagingView;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** What a reader of a staging region finds for a chunk. */
public final class StagedBytes {

    private StagedBytes() {
    }

    /** The staged bytes of {@code key} at {@code etag}, copied out under a pin; null when it is not staged. */
    public static byte[] read(StagingView view, ChunkKey key, String etag) {
        StagedChunk c = view.acquire(key, etag);
        if (c == null) {
            return null;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment target = arena.allocate(c.length());
            view.copyOut(c, 0, target, 0, c.length());
            return target.toArray(ValueLayout.JAVA_BYTE);
        } finally {
            view.release(c);
        }
    }
}
