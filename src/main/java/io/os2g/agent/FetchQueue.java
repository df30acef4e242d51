package io.os2g.agent;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * The agent's fetches from the store, at most {@code slots} at once, a reader's first. A fetch staged
 * ahead of its reader (a directory's next files, a hinted epoch) runs only while no reader's fetch is
 * waiting and leaves a quarter of the slots free, so a reader that misses waits one round trip, not
 * behind hundreds of files queued in listing order. A queued fetch ahead becomes a reader's when a
 * reader asks for it ({@link Ticket#promote}). Queued fetches hold no thread.
 */
final class FetchQueue {

    /** One fetch: queued, then running, then done; its slot is given back once ({@link #release}). */
    final class Ticket {
        private final Runnable fetch;
        private final Consumer<RejectedExecutionException> abandoned;
        private boolean started; // guarded by lock
        private boolean released; // guarded by lock

        private Ticket(Runnable fetch, Consumer<RejectedExecutionException> abandoned) {
            this.fetch = fetch;
            this.abandoned = abandoned;
        }

        /** A reader waits for this fetch: if it is still queued behind reads, it goes with the readers' now. */
        void promote() {
            lock.lock();
            try {
                if (started) {
                    return;
                }
                readers.addLast(this); // left in the queue ahead too: whichever reaches it first starts it
            } finally {
                lock.unlock();
            }
            dispatch();
        }

        /** The fetch is done with the store: its slot goes to the next one. */
        void release() {
            lock.lock();
            try {
                if (released || !started) {
                    return;
                }
                released = true;
                running--;
            } finally {
                lock.unlock();
            }
            dispatch();
        }
    }

    private final Executor executor;
    private final int slots;
    private final int aheadSlots;
    private final ReentrantLock lock = new ReentrantLock();
    private final ArrayDeque<Ticket> readers = new ArrayDeque<>();
    private final ArrayDeque<Ticket> ahead = new ArrayDeque<>();
    private int running;
    private boolean closed;

    FetchQueue(Executor executor, int slots) {
        this.executor = executor;
        this.slots = slots;
        this.aheadSlots = Math.max(1, slots - Math.max(1, slots / 4));
    }

    /**
     * Queues {@code fetch} (ahead of its reader, or for one), to run on the executor when a slot is its;
     * the fetch gives its slot back with {@link Ticket#release}, and a fetch that returns without doing so
     * gives it back then. A fetch that never runs (the queue closed first) is handed to {@code abandoned}.
     */
    Ticket submit(Runnable fetch, Consumer<RejectedExecutionException> abandoned, boolean ahead) {
        Ticket ticket = new Ticket(fetch, abandoned);
        boolean queued;
        lock.lock();
        try {
            queued = !closed;
            if (queued) {
                (ahead ? this.ahead : readers).addLast(ticket);
            } else {
                ticket.started = true;
            }
        } finally {
            lock.unlock();
        }
        if (!queued) {
            abandoned.accept(new RejectedExecutionException("closed"));
        }
        dispatch();
        return ticket;
    }

    /** Abandons every queued fetch; those running end as the executor lets them. */
    void close() {
        List<Ticket> left = new ArrayList<>();
        lock.lock();
        try {
            closed = true;
            for (Ticket t : readers) {
                if (!t.started) {
                    t.started = true;
                    left.add(t);
                }
            }
            for (Ticket t : ahead) {
                if (!t.started) {
                    t.started = true;
                    left.add(t);
                }
            }
            readers.clear();
            ahead.clear();
        } finally {
            lock.unlock();
        }
        left.forEach(t -> t.abandoned.accept(new RejectedExecutionException("closed")));
    }

    /** Starts queued fetches while there are slots for them: readers' first. */
    private void dispatch() {
        while (true) {
            Ticket next;
            lock.lock();
            try {
                next = next();
                if (next == null) {
                    return;
                }
                next.started = true;
                running++;
            } finally {
                lock.unlock();
            }
            Ticket started = next;
            try {
                executor.execute(() -> {
                    try {
                        started.fetch.run();
                    } finally {
                        started.release();
                    }
                });
            } catch (RejectedExecutionException e) {
                started.release();
                started.abandoned.accept(e);
            }
        }
    }

    /** The next fetch to start now, or null. Under the lock. */
    private Ticket next() {
        while (running < slots && !readers.isEmpty()) {
            Ticket t = readers.pollFirst();
            if (!t.started) {
                return t;
            }
        }
        if (!readers.isEmpty()) {
            return null;
        }
        while (running < aheadSlots && !ahead.isEmpty()) {
            Ticket t = ahead.pollFirst();
            if (!t.started) {
                return t;
            }
        }
        return null;
    }

}
