package io.os2g.staging;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class ChunkLayoutTest {

    private final ChunkLayout layout = new ChunkLayout(8 << 20);

    @Test
    void offsetsMapToChunks() {
        assertEquals(0, layout.index(0));
        assertEquals(0, layout.index((8 << 20) - 1));
        assertEquals(1, layout.index(8 << 20));
        assertEquals(8L << 20, layout.start(1));
    }

    @Test
    void lastChunkIsShortAndEmptyObjectsHaveNone() {
        long size = (8L << 20) * 2 + 5;
        assertEquals(3, layout.count(size));
        assertEquals(8 << 20, layout.length(size, 1));
        assertEquals(5, layout.length(size, 2));
        assertEquals(0, layout.length(size, 3));
        assertEquals(0, layout.count(0));
        assertEquals(1, layout.count(1));
        assertEquals(125_000, layout.length(125_000, 0));
    }

    @Test
    void chunkSizeMustBeAPowerOfTwo() {
        assertThrows(IllegalArgumentException.class, () -> new ChunkLayout(3_000_000));
        assertThrows(IllegalArgumentException.class, () -> new ChunkLayout(0));
    }
}
