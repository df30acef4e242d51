package io.os2g.agent;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One chunk's fetch while it runs: done when the whole chunk is staged (or the fetch failed), and
 * before that, for a reader that needs only the chunk's first bytes, done as soon as they are
 * readable in staging (the chunk is published early and filled as the body arrives).
 */
final class FetchInFlight {

    private record Waiter(long needed, CompletableFuture<Void> ready) {
    }

    private final CompletableFuture<Void> done = new CompletableFuture<>();
    private final List<Waiter> waiters = new ArrayList<>(2);
    /** Bytes from the chunk's start that readers can read now, and whether the fetch ended; guarded by this. */
    private long readable;
    private boolean ended;
    /** Its place in the fetch queue, and whether a reader waits for it; guarded by this. */
    private FetchQueue.Ticket ticket;
    private boolean wanted;

    /** The fetch is queued as {@code t}: a reader that waited for it already moves it up now. */
    void queuedAs(FetchQueue.Ticket t) {
        boolean promote;
        synchronized (this) {
            ticket = t;
            promote = wanted;
        }
        if (promote) {
            t.promote();
        }
    }

    /** A reader waits for this fetch: queued ahead of its reader, it goes with the readers' fetches now. */
    void wanted() {
        FetchQueue.Ticket t;
        synchronized (this) {
            if (wanted || ended) {
                return;
            }
            wanted = true;
            t = ticket;
        }
        if (t != null) {
            t.promote();
        }
    }

    /** The fetch is done with the store: its slot goes to the next fetch. */
    void releaseSlot() {
        FetchQueue.Ticket t;
        synchronized (this) {
            t = ticket;
        }
        if (t != null) {
            t.release();
        }
    }

    /** Completes when the whole chunk is staged, or with the fetch's failure. */
    CompletableFuture<Void> done() {
        return done;
    }

    /** Completes when the chunk's first {@code needed} bytes are readable, or when the fetch ends. */
    synchronized CompletableFuture<Void> until(long needed) {
        if (ended) {
            return done;
        }
        if (needed <= readable) {
            return CompletableFuture.completedFuture(null);
        }
        CompletableFuture<Void> ready = new CompletableFuture<>();
        waiters.add(new Waiter(needed, ready));
        return ready;
    }

    /** The chunk's first {@code bytes} are readable in staging. */
    void readable(long bytes) {
        List<CompletableFuture<Void>> ready = null;
        synchronized (this) {
            readable = Math.max(readable, bytes);
            if (waiters.isEmpty()) {
                return;
            }
            for (var it = waiters.iterator(); it.hasNext(); ) {
                Waiter w = it.next();
                if (w.needed() <= readable) {
                    if (ready == null) {
                        ready = new ArrayList<>(waiters.size());
                    }
                    ready.add(w.ready());
                    it.remove();
                }
            }
        }
        if (ready != null) {
            ready.forEach(f -> f.complete(null)); // outside the lock: a waiter's callback may run here
        }
    }

    /** The fetch ended: {@code failure} null when the whole chunk is staged. */
    void finish(Throwable failure) {
        List<Waiter> left;
        synchronized (this) {
            ended = true;
            left = List.copyOf(waiters);
            waiters.clear();
        }
        // outside the lock: dependents run here
        if (failure == null) {
            done.complete(null);
        } else {
            done.completeExceptionally(failure);
        }
        for (Waiter w : left) {
            if (failure == null) {
                w.ready().complete(null);
            } else {
                w.ready().completeExceptionally(failure);
            }
        }
    }
}
