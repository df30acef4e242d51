package io.os2g.store;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Bounded retries with exponential backoff and equal jitter: half of each backoff is fixed, half
 * random. The random half spreads a burst of failed clients instead of having them retry in
 * lock-step against a throttling server; the fixed half guarantees the retries span a server restart
 * of a few seconds (full jitter can spend all of them in the first few hundred milliseconds).
 *
 * @param maxAttempts attempts in all, the first included (default 7: one try and six retries, whose
 *     backoffs add up to 3.2-6.3 s)
 * @param baseDelay backoff before the first retry; doubles per retry
 * @param maxDelay cap on one backoff
 * @param requestTimeout deadline of one HTTP call, connection and body included
 */
public record RetryPolicy(int maxAttempts, Duration baseDelay, Duration maxDelay, Duration requestTimeout) {

    public static final RetryPolicy DEFAULT =
            new RetryPolicy(7, Duration.ofMillis(100), Duration.ofSeconds(5), Duration.ofSeconds(10));

    public RetryPolicy {
        if (maxAttempts < 1) {
            throw new IllegalArgumentException("maxAttempts must be >= 1: maxAttempts=" + maxAttempts);
        }
    }

    /** The backoff before retry number {@code retry} (1-based), jittered over [cap / 2, cap]. */
    public Duration backoff(int retry) {
        long cap = cap(retry);
        return Duration.ofMillis(cap / 2 + ThreadLocalRandom.current().nextLong(cap - cap / 2 + 1));
    }

    private long cap(int retry) {
        return Math.min(maxDelay.toMillis(), baseDelay.toMillis() << Math.min(retry - 1, 20));
    }

    /** The longest one call with all its retries can take. */
    public Duration deadline() {
        Duration total = requestTimeout.multipliedBy(maxAttempts);
        for (int r = 1; r < maxAttempts; r++) {
            total = total.plus(Duration.ofMillis(cap(r)));
        }
        return total;
    }
}
