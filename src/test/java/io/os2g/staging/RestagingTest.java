package io.os2g.staging;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class RestagingTest {

    @Test
    void stagesAgainUntilThePinHolds() {
        AtomicInteger staged = new AtomicInteger();
        AtomicInteger pins = new AtomicInteger();
        Object chunk = new Object();
        Object pinned = Restaging.stageAndPin(timeout -> staged.incrementAndGet(),
                () -> pins.incrementAndGet() < 3 ? null : chunk, System.nanoTime() + TimeUnit.MINUTES.toNanos(1));
        assertSame(chunk, pinned);
        assertEquals(3, staged.get(), "one staging before each pin");
    }

    @Test
    void givesNullOnceTheDeadlineHasPassed() {
        AtomicInteger staged = new AtomicInteger();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(20);
        assertNull(Restaging.stageAndPin(timeout -> {
            assertTrue(timeout >= 1, "the wait is bounded by what is left of the deadline, at least 1 ns");
            staged.incrementAndGet();
        }, () -> null, deadline));
        assertTrue(System.nanoTime() - deadline > -TimeUnit.MILLISECONDS.toNanos(50), "it did not give up long before the deadline");
        assertTrue(staged.get() >= 2, "it tried again before giving up");
    }

    @Test
    void aFailedStagingEndsIt() {
        AtomicInteger pins = new AtomicInteger();
        assertThrows(TimeoutException.class, () -> Restaging.stageAndPin(timeout -> {
            throw new TimeoutException("fetch past its deadline");
        }, () -> { pins.incrementAndGet(); return null; }, System.nanoTime() + TimeUnit.MINUTES.toNanos(1)));
        assertEquals(0, pins.get(), "nothing pinned after a failed staging");
    }
}
