package io.os2g.store;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Bounded retries with exponential backoff and full jitter (the AWS SDK's choice: it spreads a
 * burst of failed clients instead of having them retry in lock-step against a throttling server).
 *
 * @param maxAttempts attempts in all, the first included (default 4: one try and three retries)
 * @param baseDelay backoff before the first retry; doubles per retry
 * @param maxDelay cap on one backoff
 * @param requestTimeout deadline of one HTTP call, connection and body included
 */
public record RetryPolicy(int maxAttempts, Duration baseDelay, Duration maxDelay, Duration requestTimeout) {

    public static final RetryPolicy DEFAULT =
            new RetryPolicy(4, Duration.ofMillis(50), Duration.ofSeconds(2), Duration.ofSeconds(30));

    public RetryPolicy {
        if (maxAttempts < 1) {
            throw new IllegalArgumentException("maxAttempts must be >= 1: maxAttempts=" + maxAttempts);
        }
    }

    /** The backoff before retry number {@code retry} (1-based), jittered over [0, cap]. */
    public Duration backoff(int retry) {
        long cap = Math.min(maxDelay.toMillis(), baseDelay.toMillis() << Math.min(retry - 1, 20));
        return Duration.ofMillis(ThreadLocalRandom.current().nextLong(cap + 1));
    }

    /** The longest one call with all its retries can take. */
    public Duration deadline() {
        Duration total = requestTimeout.multipliedBy(maxAttempts);
        for (int r = 1; r < maxAttempts; r++) {
            total = total.plus(Duration.ofMillis(Math.min(maxDelay.toMillis(), baseDelay.toMillis() << Math.min(r - 1, 20))));
        }
        return total;
    }
}
