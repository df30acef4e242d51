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
        assertEquals(0 + 128 * 1024 + MIB, w.onRead(0, 128 * 1024, 0, 0));
        long[] expected = {2, 4, 8, 16, 16};
        for (int i = 0; i < expected.length; i++) {
            long offset = (i + 1) * CHUNK;
            long end = w.onRead(offset, 128 * 1024, 0, 0);
            assertEquals(expected[i] * MIB, w.window());
            assertEquals(offset + 128 * 1024 + expected[i] * MIB, end);
        }
    }

    @Test
    void slightlyOutOfOrderReadsFromKernelReadaheadKeepTheWindow() {
        ReadaheadWindow w = new ReadaheadWindow(MIB, 64 * MIB, CHUNK);
        w.onRead(0, 4096, 0, 0);
        w.onRead(CHUNK, 4096, 0, 0);
        w.onRead(2 * CHUNK, 4096, 0, 0);
        assertEquals(4 * MIB, w.window());
        w.onRead(2 * CHUNK - 128 * 1024, 128 * 1024, 0, 0); // a late read just behind the frontier
        assertEquals(4 * MIB, w.window(), "neither reset nor grown");
        assertEquals(2 * CHUNK + 4096 + 4 * MIB, w.onRead(CHUNK, 4096, 0, 0), "the range reaches past the frontier");
    }

    @Test
    void aJumpQuartersTheWindowSoRandomReadsAreSoonBackAtTheStart() {
        ReadaheadWindow w = new ReadaheadWindow(MIB, 256 * MIB, CHUNK);
        for (int c = 0; c < 10; c++) {
            w.onRead(c * CHUNK, 4096, 0, 0);
        }
        assertEquals(256 * MIB, w.window());
        w.onRead(500 * CHUNK, 4096, 0, 0); // the next tensor of a checkpoint, elsewhere in the file
        assertEquals(64 * MIB, w.window(), "a reader of long runs keeps a good part of its window");
        w.onRead(501 * CHUNK, 4096, 0, 0);
        assertEquals(128 * MIB, w.window());
        long[] random = {90, 7, 300, 41};
        long[] expected = {32, 8, 2, 1};
        for (int i = 0; i < random.length; i++) {
            w.onRead(random[i] * 10 * CHUNK, 4096, 0, 0);
            assertEquals(expected[i] * MIB, w.window(), "random read " + i);
        }
    }

    @Test
    void aSeekBackOrAFarJumpFromASmallWindowStartsOver() {
        ReadaheadWindow w = new ReadaheadWindow(MIB, 64 * MIB, CHUNK);
        w.onRead(0, 4096, 0, 0);
        w.onRead(CHUNK, 4096, 0, 0);
        w.onRead(2 * CHUNK, 4096, 0, 0);
        assertEquals(4 * MIB, w.window());
        w.onRead(200 * CHUNK, 4096, 0, 0);
        assertEquals(MIB, w.window());
        w.onRead(201 * CHUNK, 4096, 0, 0);
        assertEquals(2 * MIB, w.window());
        w.onRead(0, 4096, 0, 0);
        assertEquals(MIB, w.window());
    }

    private static final long MS = 1_000_000;

    /** A reader at {@code mbPerS} reporting once per chunk from {@code fromChunk} on, each chunk taking {@code fetchMs} from the store. */
    private static void readAt(ReadaheadWindow w, int fromChunk, int chunks, double mbPerS, long fetchMs) {
        for (int c = fromChunk; c < fromChunk + chunks; c++) {
            long now = (long) (c * CHUNK / (mbPerS * 1e6) * 1e9);
            w.onRead(c * CHUNK, 128 * 1024, now, fetchMs * MS);
        }
    }

    @Test
    void aFastReaderOfASlowStoreGrowsItsWindowToTheCap() {
        ReadaheadWindow w = new ReadaheadWindow(MIB, 256 * MIB, CHUNK);
        readAt(w, 0, 20, 1000, 120); // 1 GB/s from a store that takes 120 ms a chunk: 240 MB aimed at
        assertEquals(256 * MIB, w.window());
    }

    @Test
    void theWindowStopsGrowingAtTwiceWhatOneFetchTimeOfReadingTakes() {
        ReadaheadWindow w = new ReadaheadWindow(MIB, 256 * MIB, CHUNK);
        readAt(w, 0, 20, 500, 20); // 500 MB/s, 20 ms a chunk: 20 MB aimed at
        assertEquals(32 * MIB, w.window(), "doubled past 20 MB once, then held");
    }

    @Test
    void aSlowReaderShrinksItsWindowToWhatItNeeds() {
        ReadaheadWindow w = new ReadaheadWindow(MIB, 256 * MIB, CHUNK);
        for (int c = 0; c < 8; c++) {
            w.onRead(c * CHUNK, 4096, 0, 0); // no times known yet: doubles
        }
        assertEquals(128 * MIB, w.window());
        readAt(w, 8, 10, 40, 30); // then 40 MB/s (a reader that decodes) from a 30 ms store: 2.4 MB aimed at
        assertEquals(2_400_000, w.window(), 50_000);
    }
}
