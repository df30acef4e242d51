package io.os2g.agent;

import static org.junit.jupiter.api.Assertions.assertNotNull;

import io.os2g.namespace.Node;
import io.os2g.staging.ChunkKey;
import io.os2g.staging.ExtentIndex;
import io.os2g.staging.StagedChunk;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.TimeUnit;

/** Reads a whole file through an agent, chunk by chunk, from its staging region, as a shim would. */
final class StagedReads {

    private StagedReads() {
    }

    static byte[] read(Agent agent, ExtentIndex index, Node.File f, int chunk) throws Exception {
        long handle = agent.open(f.inode(), f.key(), f.etag(), f.size());
        byte[] out = new byte[(int) f.size()];
        for (long c = 0; c * chunk < f.size(); c++) {
            StagedChunk s = null;
            for (int attempt = 0; s == null && attempt < 10; attempt++) { // a small region may evict it before it is pinned
                agent.stage(handle, c * chunk, chunk).get(30, TimeUnit.SECONDS);
                s = index.view().acquire(new ChunkKey(f.inode(), c), f.etag());
            }
            assertNotNull(s, "chunk " + c + " staged");
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment m = arena.allocate(s.length());
                index.view().copyOut(s, 0, m, 0, s.length());
                MemorySegment.copy(m, ValueLayout.JAVA_BYTE, 0, out, (int) (c * chunk), (int) s.length());
            } finally {
                index.view().release(s);
            }
        }
        agent.release(handle);
        return out;
    }
}
