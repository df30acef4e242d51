package io.os2g.link;

import io.os2g.Errno;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The deadline of each READ the shim left to the agent: one that is not answered in time fails with
 * EIO (the shim then answers it itself). Every READ waits the same time, so deadlines come in the
 * order READs were sent and a queue in that order is enough: one thread looks at its head once a
 * second while READs are out, drops the answered ones and fails the late ones, and sleeps while none
 * are out (a timer per READ cost a wake-up of the JDK's scheduler thread per READ).
 */
final class AnswerDeadlines {

    private static final long LOOK_EVERY = TimeUnit.SECONDS.toNanos(1);

    private record Entry(CompletableFuture<?> answer, long deadline) {
    }

    private final long deadlineNanos;
    private final String late;
    private final ConcurrentLinkedQueue<Entry> sent = new ConcurrentLinkedQueue<>();
    private final Thread sweeper;
    private volatile boolean asleep;

    AnswerDeadlines(Duration deadline) {
        this.deadlineNanos = deadline.toNanos();
        this.late = "the agent did not answer a read within " + deadline.toMillis() + " ms";
        this.sweeper = Thread.ofPlatform().daemon().name("os2g-link-deadlines").unstarted(this::sweep);
        sweeper.start();
    }

    /** Fails {@code answer} with EIO unless it completes within the deadline. */
    void watch(CompletableFuture<?> answer) {
        sent.add(new Entry(answer, System.nanoTime() + deadlineNanos));
        if (asleep) {
            LockSupport.unpark(sweeper);
        }
    }

    private void sweep() {
        while (!Thread.currentThread().isInterrupted()) {
            long now = System.nanoTime();
            Entry head;
            while ((head = sent.peek()) != null && (head.answer().isDone() || now - head.deadline() >= 0)) {
                sent.poll();
                if (!head.answer().isDone()) { // an exception (and its stack trace) only for a READ that is late
                    head.answer().completeExceptionally(new LinkException(Errno.EIO, late));
                }
            }
            if (head == null) {
                asleep = true;
                if (sent.isEmpty()) {
                    LockSupport.park(this);
                }
                asleep = false;
            } else {
                LockSupport.parkNanos(this, Math.min(LOOK_EVERY, head.deadline() - now));
            }
        }
    }

    /** Stops the sweeper (the link's pending answers are failed by its close). */
    void close() {
        sweeper.interrupt();
    }
}
