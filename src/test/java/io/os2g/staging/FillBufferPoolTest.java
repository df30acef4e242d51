package io.os2g.staging;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class FillBufferPoolTest {

    @Test
    void buffersGivenBackAreTakenAgainAndNoMoreThanTheBoundAreKept() {
        FillBufferPool buffers = new FillBufferPool(3);
        List<MemorySegment> first = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            first.add(buffers.take());
        }
        first.forEach(b -> assertEquals(FillBufferPool.SIZE, b.byteSize()));
        Set<Long> given = new HashSet<>();
        for (MemorySegment b : first) {
            given.add(b.address());
            buffers.giveBack(b);
        }
        assertEquals(5, given.size(), "five distinct buffers");
        int again = 0;
        for (int i = 0; i < 5; i++) {
            if (given.contains(buffers.take().address())) {
                again++;
            }
        }
        assertEquals(3, again, "the three kept are taken again, the other two are new");
    }
}
