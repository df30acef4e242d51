package io.os2g.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class ReadaheadWindowTest {

    private static final long MIB = 1 << 20;
    private static final long CHUNK = 8 * MIB;

    @Test
    void startsAtOneMibAndDoublesWhileSequentialUpToTheCap() {
        ReadaheadWindow w = new ReadaheadWindow(MIB, 16 * MIB, CHUNK);
        assertEquals(0 + 128 * 1024 + MIB, w.onRead(0, 128 * 1024));
        long[] expected = {2, 4, 8, 16, 16};
        for (int i = 0; i < expected.length; i++) {
            long offset = (i + 1) * CHUNK;
            long end = w.onRead(offset, 128 * 1024);
            assertEquals(expected[i] * MIB, w.window());
            assertEquals(offset + 128 * 1024 + expected[i] * MIB, end);
        }
    }

    @Test
    void slightlyOutOfOrderReadsFromKernelReadaheadKeepTheWindow() {
        ReadaheadWindow w = new ReadaheadWindow(MIB, 64 * MIB, CHUNK);
        w.onRead(0, 4096);
        w.onRead(CHUNK, 4096);
        w.onRead(2 * CHUNK, 4096);
        assertEquals(4 * MIB, w.window());
        w.onRead(2 * CHUNK - 128 * 1024, 128 * 1024); // a late read just behind the frontier
        assertEquals(4 * MIB, w.window(), "neither reset nor grown");
        assertEquals(2 * CHUNK + 4096 + 4 * MIB, w.onRead(CHUNK, 4096), "the range reaches past the frontier");
    }

    @Test
    void aSeekBackOrAFarJumpResetsTheWindow() {
        ReadaheadWindow w = new ReadaheadWindow(MIB, 64 * MIB, CHUNK);
        w.onRead(0, 4096);
        w.onRead(CHUNK, 4096);
        w.onRead(2 * CHUNK, 4096);
        assertEquals(4 * MIB, w.window());
        w.onRead(200 * CHUNK, 4096);
        assertEquals(MIB, w.window());
        w.onRead(201 * CHUNK, 4096);
        assertEquals(2 * MIB, w.window());
        w.onRead(0, 4096);
        assertEquals(MIB, w.window());
    }
}
