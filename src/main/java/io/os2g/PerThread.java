package io.os2g;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.function.Supplier;

/**
 * Objects dear to make (a keyed MAC, a digest, a native buffer) for one user at a time. A platform
 * thread keeps its own, as a {@link ThreadLocal} would; a virtual thread borrows one from a small pool
 * and gives it back when the lease closes: the agent starts a virtual thread per fetch and per request,
 * where a {@code ThreadLocal} would make a new one every time.
 */
public final class PerThread<T> {

    /** Idle objects kept for virtual threads; more are made while all these are lent, and dropped on return. */
    private static final int POOLED = 64;

    private final Supplier<T> make;
    private final ThreadLocal<T> own;
    private final ArrayBlockingQueue<T> idle = new ArrayBlockingQueue<>(POOLED);

    private PerThread(Supplier<T> make) {
        this.make = make;
        this.own = ThreadLocal.withInitial(make);
    }

    public static <T> PerThread<T> withInitial(Supplier<T> make) {
        return new PerThread<>(make);
    }

    /** One object for the calling thread's use until the lease is closed (on any thread). */
    public Lease<T> take() {
        if (!Thread.currentThread().isVirtual()) {
            return new Lease<>(own.get(), null);
        }
        T pooled = idle.poll();
        return new Lease<>(pooled != null ? pooled : make.get(), idle);
    }

    /** A borrowed object; closing gives it back (a platform thread's own stays its own). */
    public static final class Lease<T> implements AutoCloseable {
        private final T value;
        private ArrayBlockingQueue<T> home;

        private Lease(T value, ArrayBlockingQueue<T> home) {
            this.value = value;
            this.home = home;
        }

        public T value() {
            return value;
        }

        @Override
        public void close() {
            ArrayBlockingQueue<T> to = home;
            home = null; // given back once, however often closed
            if (to != null) {
                to.offer(value);
            }
        }
    }
}
