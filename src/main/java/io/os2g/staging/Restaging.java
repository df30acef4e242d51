package io.os2g.staging;

import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;

/**
 * Pinning a chunk that may be evicted between being staged and being pinned (a region too small for
 * its readers): stage it again and pin again, after a jittered pause that doubles up to 50 ms, until
 * a deadline, so readers take turns instead of failing at the first eviction.
 */
public final class Restaging {

    private static final long FIRST_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final long MAX_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    /** Asks for the chunk to be staged and waits until it is, at most {@code timeoutNanos}. */
    @FunctionalInterface
    public interface Stage<E extends Exception> {
        void await(long timeoutNanos) throws E;
    }

    private Restaging() {
    }

    /**
     * Stages, then pins, until {@code pin} gives something or {@code deadline} ({@link System#nanoTime})
     * has passed.
     *
     * @return what {@code pin} gave; null when the deadline came first
     */
    public static <T, E extends Exception> T stageAndPin(Stage<E> stage, Supplier<T> pin, long deadline) throws E {
        for (long pause = FIRST_PAUSE_NANOS; ; pause = Math.min(2 * pause, MAX_PAUSE_NANOS)) {
            stage.await(Math.max(1, deadline - System.nanoTime()));
            T pinned = pin.get();
            if (pinned != null) {
                return pinned;
            }
            if (System.nanoTime() + pause - deadline > 0) {
                return null;
            }
            LockSupport.parkNanos(pause + ThreadLocalRandom.current().nextLong(pause));
        }
    }
}
