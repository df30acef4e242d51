package io.os2g.store;

import io.os2g.WarningLimiter;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The credentials every request of a store is signed with, renewed off the read path: a background
 * thread asks the source again ahead of their expiry, and a request the store rejected for them
 * ({@link #refreshAfterRejection}) asks at once. When the source fails, the current credentials are
 * kept (a warning, rate-limited) and asked for again with backoff; once they have expired, requests
 * fail (EACCES) until the source answers again.
 */
public final class RefreshingCredentials implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(RefreshingCredentials.class);
    /** Renewal this long before expiry at most (the AWS SDKs' 5 minutes) ... */
    static final Duration MAX_AHEAD = Duration.ofMinutes(5);
    /** ... and a fifth of the credentials' lifetime at most, so short-lived ones are not renewed at once. */
    static final int AHEAD_FRACTION = 5;
    /** Backoff of a failed renewal: 1 s doubling to 30 s. */
    static final Duration FIRST_RETRY = Duration.ofSeconds(1);
    static final Duration MAX_RETRY = Duration.ofSeconds(30);
    /** A rejection asks the source at most this often (a burst of rejected requests asks once). */
    static final Duration REJECTION_INTERVAL = Duration.ofSeconds(1);

    /** One thread for the process's renewals: each asks its source with the source's own deadline. */
    private static final ScheduledExecutorService RENEWALS = Executors.newSingleThreadScheduledExecutor(
            Thread.ofPlatform().daemon().name("os2g-credentials").factory());

    /** Runs a renewal later; tests run them by hand. */
    interface Timer {
        /** Runs {@code task} after {@code delay}; the returned handle cancels it. */
        Runnable schedule(Runnable task, Duration delay);

        static Timer of(ScheduledExecutorService executor) {
            return (task, delay) -> {
                ScheduledFuture<?> f = executor.schedule(task, delay.toMillis(), TimeUnit.MILLISECONDS);
                return () -> f.cancel(false);
            };
        }
    }

    private final CredentialsSource source;
    private final Clock clock;
    private final Timer timer;
    private final WarningLimiter warnings = new WarningLimiter(LOG);
    private volatile Credentials current;
    private Runnable cancelNext;
    private Instant lastRejection = Instant.EPOCH;
    private int failures;
    private boolean closed;

    private RefreshingCredentials(CredentialsSource source, Credentials first, Clock clock, Timer timer) {
        this.source = source;
        this.current = first;
        this.clock = clock;
        this.timer = timer;
    }

    /**
     * Asks {@code source} now and keeps its credentials renewed.
     *
     * @throws CredentialsSource.Unavailable when the source has none now
     */
    public static RefreshingCredentials start(CredentialsSource source) {
        return start(source, Clock.systemUTC(), Timer.of(RENEWALS));
    }

    static RefreshingCredentials start(CredentialsSource source, Clock clock, Timer timer) {
        Credentials first = source.fetch();
        LOG.debug("credentials from {}{}", source.name(), until(first));
        RefreshingCredentials credentials = new RefreshingCredentials(source, first, clock, timer);
        synchronized (credentials) {
            credentials.scheduleAfterSuccess();
        }
        return credentials;
    }

    /** The credentials to sign with now (possibly expired, while the source cannot renew them). */
    public Credentials current() {
        return current;
    }

    /** Where they come from, for messages. */
    public String sourceName() {
        return source.name();
    }

    /**
     * The store rejected {@code rejected} (ExpiredToken, InvalidToken ...): asks the source at once, unless
     * it was asked within {@link #REJECTION_INTERVAL} or the credentials changed meanwhile; returns what
     * to sign the retry with (the same credentials when nothing newer could be had).
     */
    public synchronized Credentials refreshAfterRejection(Credentials rejected) {
        if (current != rejected || closed) {
            return current;
        }
        Instant now = clock.instant();
        if (Duration.between(lastRejection, now).compareTo(REJECTION_INTERVAL) < 0) {
            return current;
        }
        lastRejection = now;
        renew("the store rejected them");
        return current;
    }

    private synchronized void renewOnSchedule() {
        if (!closed) {
            renew(null);
        }
    }

    /** Asks the source and schedules the next renewal, after a success or a failure. */
    private void renew(String why) {
        Credentials before = current;
        try {
            Credentials fetched = source.fetch();
            if (sameExpiry(before, fetched) && fetched.expiration() != null && why == null) {
                // the source handed out what it had (its own cache): ask again a little later
                scheduleRetry("it returned the same credentials", before);
                return;
            }
            current = fetched;
            if (failures > 0) {
                LOG.info("credentials from {} renewed after {} failed attempts{}", source.name(), failures, until(fetched));
            } else {
                LOG.debug("credentials from {} renewed{}{}", source.name(), why == null ? "" : " (" + why + ")", until(fetched));
            }
            failures = 0;
            scheduleAfterSuccess();
        } catch (RuntimeException e) {
            scheduleRetry(e.getMessage(), before);
        }
    }

    private void scheduleAfterSuccess() {
        Instant expiration = current.expiration();
        if (expiration == null || closed) {
            return; // credentials that do not expire are renewed only when the store rejects them
        }
        Instant now = clock.instant();
        Duration lifetime = Duration.between(now, expiration);
        Duration ahead = min(MAX_AHEAD, lifetime.dividedBy(AHEAD_FRACTION));
        schedule(max(Duration.ofMillis(100), lifetime.minus(ahead)));
    }

    private void scheduleRetry(String reason, Credentials kept) {
        failures++;
        Duration backoff = min(MAX_RETRY, FIRST_RETRY.multipliedBy(1L << Math.min(failures - 1, 10)));
        Instant expiration = kept.expiration();
        Instant now = clock.instant();
        if (expiration != null && now.isBefore(expiration)) {
            // keep asking before they expire: at most half the time that is left
            backoff = max(Duration.ofMillis(100), min(backoff, Duration.between(now, expiration).dividedBy(2)));
        }
        String state = expiration == null ? "" : now.isBefore(expiration)
                ? "; the current ones stay in use until " + expiration
                : "; the current ones expired at " + expiration + ": requests fail with EACCES until it answers";
        warnings.warn("credentials " + source.name(), "cannot renew credentials from {} ({}){}; asking again in {} ms",
                source.name(), reason, state, backoff.toMillis());
        schedule(backoff);
    }

    private void schedule(Duration delay) {
        if (cancelNext != null) {
            cancelNext.run();
        }
        cancelNext = timer.schedule(this::renewOnSchedule, delay);
    }

    private static boolean sameExpiry(Credentials a, Credentials b) {
        return Objects.equals(a.accessKeyId(), b.accessKeyId()) && Objects.equals(a.expiration(), b.expiration())
                && Objects.equals(a.sessionToken(), b.sessionToken());
    }

    private static String until(Credentials c) {
        return c.expiration() == null ? "" : ", valid until " + c.expiration();
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }

    private static Duration max(Duration a, Duration b) {
        return a.compareTo(b) >= 0 ? a : b;
    }

    /** Stops renewing (the store is closed). */
    @Override
    public synchronized void close() {
        closed = true;
        if (cancelNext != null) {
            cancelNext.run();
        }
    }
}
