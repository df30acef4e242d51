package io.os2g.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.os2g.support.ManualClock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Renewal ahead of expiry, failures that keep the current credentials, renewals after a rejection: on a hand-run clock. */
@Tag("unit")
class RefreshingCredentialsTest {

    private final Instant t0 = Instant.parse("2026-12-04T12:00:00Z");
    private final ManualClock clock = new ManualClock(t0);
    private final ManualTimer timer = new ManualTimer();

    /** A source handing out credentials valid for {@code lifetime}, numbered; or failing while {@code down}. */
    private final class Issuer implements CredentialsSource {
        final Duration lifetime;
        int issued;
        boolean down;

        Issuer(Duration lifetime) {
            this.lifetime = lifetime;
        }

        @Override
        public Credentials fetch() {
            if (down) {
                throw new Unavailable("the endpoint refused the connection", true, null);
            }
            issued++;
            return new Credentials("key-" + issued, "secret-" + issued, "token-" + issued, clock.instant().plus(lifetime));
        }

        @Override
        public String name() {
            return "test issuer";
        }
    }

    @Test
    void credentialsAreRenewedAheadOfExpiryByAFifthOfTheirLifetimeAtMostFiveMinutes() {
        Issuer hourly = new Issuer(Duration.ofHours(1));
        RefreshingCredentials credentials = RefreshingCredentials.start(hourly, clock, timer);
        assertEquals("key-1", credentials.current().accessKeyId());
        assertEquals(Duration.ofMinutes(55), timer.nextDelay(), "five minutes before an hour's expiry");

        Issuer short_ = new Issuer(Duration.ofSeconds(10));
        RefreshingCredentials brief = RefreshingCredentials.start(short_, clock, timer);
        assertEquals(Duration.ofSeconds(8), timer.nextDelay(), "a fifth of a 10 s lifetime ahead");
        for (int i = 2; i <= 6; i++) {
            clock.advance(timer.nextDelay());
            timer.runNext();
            assertEquals("key-" + i, brief.current().accessKeyId(), "renewal " + i + " before expiry");
            assertTrue(clock.instant().isBefore(brief.current().expiration()));
        }
    }

    @Test
    void aFailedRenewalKeepsTheCurrentCredentialsAndAsksAgainBeforeTheyExpire() {
        Issuer issuer = new Issuer(Duration.ofSeconds(100));
        RefreshingCredentials credentials = RefreshingCredentials.start(issuer, clock, timer);
        Credentials first = credentials.current();
        issuer.down = true;
        clock.advance(timer.nextDelay()); // 80 s: 20 s left
        timer.runNext();
        assertSame(first, credentials.current(), "kept while the source is down");
        assertEquals(Duration.ofSeconds(1), timer.nextDelay(), "backoff 1 s");
        clock.advance(timer.nextDelay());
        timer.runNext();
        assertEquals(Duration.ofSeconds(2), timer.nextDelay(), "doubling");
        issuer.down = false;
        clock.advance(timer.nextDelay());
        timer.runNext();
        assertEquals("key-2", credentials.current().accessKeyId(), "renewed once the source answers");
    }

    @Test
    void expiredCredentialsStayUntilTheSourceAnswersAndBackoffIsBounded() {
        Issuer issuer = new Issuer(Duration.ofSeconds(10));
        RefreshingCredentials credentials = RefreshingCredentials.start(issuer, clock, timer);
        issuer.down = true;
        for (int i = 0; i < 12; i++) {
            clock.advance(timer.nextDelay());
            timer.runNext();
            assertTrue(timer.nextDelay().compareTo(RefreshingCredentials.MAX_RETRY) <= 0, timer.nextDelay().toString());
        }
        assertTrue(clock.instant().isAfter(credentials.current().expiration()), "expired by now");
        assertEquals(RefreshingCredentials.MAX_RETRY, timer.nextDelay());
        issuer.down = false;
        clock.advance(timer.nextDelay());
        timer.runNext();
        assertTrue(clock.instant().isBefore(credentials.current().expiration()), "recovered by itself");
    }

    @Test
    void aRejectionRenewsAtOnceButABurstOfRejectionsAsksTheSourceOnce() {
        Issuer issuer = new Issuer(Duration.ofHours(1));
        RefreshingCredentials credentials = RefreshingCredentials.start(issuer, clock, timer);
        Credentials rejected = credentials.current();
        Credentials renewed = credentials.refreshAfterRejection(rejected);
        assertEquals("key-2", renewed.accessKeyId());
        assertSame(renewed, credentials.refreshAfterRejection(rejected), "already renewed: nothing asked");
        assertSame(renewed, credentials.refreshAfterRejection(renewed), "within a second of the last: nothing asked");
        assertEquals(2, issuer.issued);
        clock.advance(Duration.ofSeconds(2));
        assertEquals("key-3", credentials.refreshAfterRejection(renewed).accessKeyId());
    }

    @Test
    void credentialsThatDoNotExpireAreNotScheduledAndAMissingSourceFailsTheStart() {
        RefreshingCredentials fixed = RefreshingCredentials.start(new Credentials("a", "b", null), clock, timer);
        assertEquals("a", fixed.current().accessKeyId());
        assertTrue(timer.tasks.isEmpty());
        Issuer down = new Issuer(Duration.ofHours(1));
        down.down = true;
        assertThrows(CredentialsSource.Unavailable.class, () -> RefreshingCredentials.start(down, clock, timer));
    }

    @Test
    void aClosedRenewerAsksNothingMore() {
        Issuer issuer = new Issuer(Duration.ofSeconds(10));
        RefreshingCredentials credentials = RefreshingCredentials.start(issuer, clock, timer);
        credentials.close();
        assertTrue(timer.tasks.isEmpty(), "its renewal cancelled");
        assertSame(credentials.current(), credentials.refreshAfterRejection(credentials.current()));
        assertEquals(1, issuer.issued);
    }

    @Test
    void theSecretAndTheTokenNeverShowInText() {
        Credentials c = new Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI", "FwoGZXIvYXdzE", t0);
        assertTrue(c.toString().contains("AKIDEXAMPLE"));
        assertTrue(!c.toString().contains("wJalrXUtnFEMI") && !c.toString().contains("FwoGZXIvYXdzE"), c.toString());
    }

    /** Keeps scheduled renewals; the test runs the latest one when its clock says so. */
    private static final class ManualTimer implements RefreshingCredentials.Timer {
        record Task(Runnable run, Duration delay) {
        }

        final List<Task> tasks = new ArrayList<>();

        @Override
        public Runnable schedule(Runnable task, Duration delay) {
            Task t = new Task(task, delay);
            tasks.add(t);
            return () -> tasks.remove(t);
        }

        Duration nextDelay() {
            return tasks.getLast().delay();
        }

        void runNext() {
            tasks.removeLast().run().run();
        }
    }
}
