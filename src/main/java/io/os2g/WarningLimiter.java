package io.os2g;

import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import org.slf4j.Logger;

/**
 * Warnings that can repeat once per request (a read failing with EIO while the store is down) logged at
 * most {@link #BURST} times per kind per {@link #WINDOW_NANOS}: a store outage under a DataLoader is
 * a few lines, not one per read. The first warning of a kind after a quiet spell says how many of that
 * kind were left out.
 */
public final class WarningLimiter {

    static final int BURST = 5;
    static final long WINDOW_NANOS = 60_000_000_000L;

    private final Logger log;
    private final LongSupplier clock;
    private final ConcurrentHashMap<String, Window> windows = new ConcurrentHashMap<>();

    private static final class Window {
        long start;
        int logged;
        long suppressed;
    }

    public WarningLimiter(Logger log) {
        this(log, System::nanoTime);
    }

    WarningLimiter(Logger log, LongSupplier clock) {
        this.log = log;
        this.clock = clock;
    }

    /**
     * Logs {@code format} with {@code args} at WARN unless {@link #BURST} warnings of {@code kind} were
     * logged in the current window.
     *
     * @param kind what makes two warnings "the same" (an operation and an errno, not a path)
     */
    public void warn(String kind, String format, Object... args) {
        long now = clock.getAsLong();
        long leftOut;
        int count;
        Window w = windows.computeIfAbsent(kind, k -> new Window());
        synchronized (w) {
            if (w.logged == 0 || now - w.start >= WINDOW_NANOS) {
                leftOut = w.suppressed;
                w.start = now;
                w.logged = 0;
                w.suppressed = 0;
            } else if (w.logged >= BURST) {
                w.suppressed++;
                return;
            } else {
                leftOut = 0;
            }
            count = ++w.logged;
        }
        if (leftOut > 0) {
            log.warn(format + " ({} more like it were not logged in the last minute)", append(args, leftOut));
        } else if (count == BURST) {
            log.warn(format + " (further ones like it are left out for a minute)", args);
        } else {
            log.warn(format, args);
        }
    }

    private static Object[] append(Object[] args, Object last) {
        Object[] all = java.util.Arrays.copyOf(args, args.length + 1);
        all[args.length] = last;
        return all;
    }
}
