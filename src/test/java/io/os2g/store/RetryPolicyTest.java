package io.os2g.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class RetryPolicyTest {

    @Test
    void eachBackoffIsBetweenHalfAndAllOfItsDoublingCap() {
        RetryPolicy p = new RetryPolicy(8, Duration.ofMillis(100), Duration.ofSeconds(5), Duration.ofSeconds(10));
        long[] caps = {100, 200, 400, 800, 1600, 3200, 5000, 5000};
        for (int retry = 1; retry <= caps.length; retry++) {
            for (int i = 0; i < 200; i++) {
                long ms = p.backoff(retry).toMillis();
                assertTrue(ms >= caps[retry - 1] / 2 && ms <= caps[retry - 1], "retry " + retry + ": " + ms + " ms");
            }
        }
    }

    @Test
    void theDefaultRetriesSpanAtLeastThreeSecondsOfOutage() {
        RetryPolicy p = RetryPolicy.DEFAULT;
        long least = 0;
        for (int retry = 1; retry < p.maxAttempts(); retry++) {
            long shortest = Long.MAX_VALUE;
            for (int i = 0; i < 500; i++) {
                shortest = Math.min(shortest, p.backoff(retry).toMillis());
            }
            least += shortest;
        }
        assertTrue(least >= 3000, "shortest total backoff " + least + " ms");
    }

    @Test
    void theDeadlineCoversEveryAttemptAndEveryBackoff() {
        RetryPolicy p = new RetryPolicy(3, Duration.ofMillis(100), Duration.ofSeconds(5), Duration.ofSeconds(2));
        assertEquals(Duration.ofMillis(3 * 2000 + 100 + 200), p.deadline());
    }
}
