package io.os2g;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class PerThreadTest {

    private final AtomicInteger made = new AtomicInteger();
    private final PerThread<Object> objects = PerThread.withInitial(() -> {
        made.incrementAndGet();
        return new Object();
    });

    private Object onVirtualThread(java.util.function.Supplier<Object> task) throws Exception {
        AtomicReference<Object> result = new AtomicReference<>();
        Thread.ofVirtual().start(() -> result.set(task.get())).join();
        return result.get();
    }

    private Object takeAndGive() {
        try (PerThread.Lease<Object> lease = objects.take()) {
            return lease.value();
        }
    }

    @Test
    void virtualThreadsOneAfterAnotherReuseOneObject() throws Exception {
        Object first = onVirtualThread(this::takeAndGive);
        for (int i = 0; i < 100; i++) {
            assertSame(first, onVirtualThread(this::takeAndGive));
        }
        assertEquals(1, made.get());
    }

    @Test
    void virtualThreadsAtOnceNeverShareOne() throws Exception {
        List<Object> held = twoHeldAtOnce();
        assertNotSame(held.get(0), held.get(1));
        // both went back: the next two at once get those two again
        assertEquals(Set.copyOf(held), Set.copyOf(twoHeldAtOnce()));
        assertEquals(2, made.get());
    }

    @Test
    void aPlatformThreadKeepsItsOwnAndNeverLendsIt() throws Exception {
        Object own = takeAndGive();
        assertSame(own, takeAndGive());
        Object lent = onVirtualThread(this::takeAndGive);
        assertNotSame(own, lent, "a platform thread's own object is not in the pool");
        // a lease closed twice gives its object back once: two virtual threads at once still differ
        onVirtualThread(() -> {
            PerThread.Lease<Object> lease = objects.take();
            lease.close();
            lease.close();
            return null;
        });
        List<Object> held = twoHeldAtOnce();
        assertNotSame(held.get(0), held.get(1));
    }

    /** What two virtual threads get while both hold a lease at once. */
    private List<Object> twoHeldAtOnce() throws InterruptedException {
        CountDownLatch both = new CountDownLatch(2);
        Object[] got = new Object[2];
        Thread[] threads = new Thread[2];
        for (int i = 0; i < 2; i++) {
            int which = i;
            threads[i] = Thread.ofVirtual().start(() -> {
                try (PerThread.Lease<Object> lease = objects.take()) {
                    got[which] = lease.value();
                    both.countDown();
                    both.await(); // held while the other thread takes its own
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
        }
        for (Thread t : threads) {
            t.join();
        }
        return Arrays.asList(got);
    }
}
