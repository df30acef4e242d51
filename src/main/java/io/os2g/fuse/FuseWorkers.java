package io.os2g.fuse;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The threads that serve one session: each reads a request from /dev/fuse and has the session serve
 * it. {@code threads} serve at first; whenever none is left reading (all wait on reads of a slow
 * store), one more starts, up to {@code maxThreads}, so that an INTERRUPT or a request for staged
 * bytes is always read.
 */
final class FuseWorkers {

    private static final Logger LOG = LoggerFactory.getLogger(FuseWorkers.class);
    /** The largest request: a 1 MiB write plus its header, the kernel's minimum for a read buffer. */
    private static final int BUFFER = (1 << 20) + 4096;

    private final FuseSession session;
    private final int device;
    private final int pageSize;
    private final int maxThreads;
    private final List<Worker> workers = new CopyOnWriteArrayList<>();
    /** Threads waiting in read(2) of /dev/fuse. */
    private final AtomicInteger reading = new AtomicInteger();

    FuseWorkers(FuseSession session, int device, int pageSize, int threads, int maxThreads) {
        this.session = session;
        this.device = device;
        this.pageSize = pageSize;
        this.maxThreads = maxThreads;
        for (int i = 0; i < threads; i++) {
            workers.add(new Worker(i));
        }
    }

    void start() {
        workers.forEach(w -> w.thread.start());
    }

    /** Waits until every thread has seen the mount go away (ENODEV). */
    void join() throws InterruptedException {
        for (Worker w : workers) {
            w.thread.join();
        }
    }

    /** {@link #join}, for at most {@code timeout}; whether every thread ended. */
    boolean join(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (Worker w : workers) {
            if (!w.thread.join(Duration.ofNanos(Math.max(1, deadline - System.nanoTime())))) {
                return false;
            }
        }
        return true;
    }

    /** The reply pipe of the thread serving request {@code unique} now; null when none is. */
    PipedReply serving(long unique) {
        for (Worker w : workers) {
            if (w.serving == unique) {
                return w.pipe;
            }
        }
        return null;
    }

    /** One serving thread and what another thread needs to see of it (for INTERRUPT). */
    final class Worker {
        final Thread thread;
        /** The request it serves (0 while it reads /dev/fuse). */
        volatile long serving;
        volatile PipedReply pipe;

        Worker(int index) {
            this.thread = Thread.ofPlatform().name("fuse-" + index).daemon().unstarted(this::serve);
        }

        private void serve() {
            try (Arena arena = Arena.ofConfined(); PipedReply reads = new PipedReply(device, session, pageSize)) {
                pipe = reads;
                MemorySegment in = arena.allocate(BUFFER, pageSize);
                SmallReply reply = new SmallReply(device, arena);
                while (true) {
                    reading.incrementAndGet();
                    long n = Native.read(device, in);
                    if (reading.decrementAndGet() == 0 && n > 0) {
                        grow();
                    }
                    if (n <= 0) {
                        int errno = n == 0 ? FuseErrno.ENODEV : Native.errno(); // 0: a harness's peer hung up
                        if (errno == FuseErrno.EINTR || errno == FuseErrno.ENOENT || errno == FuseErrno.EAGAIN) {
                            continue; // ENOENT: the request was interrupted before we read it
                        }
                        if (errno != FuseErrno.ENODEV) {
                            LOG.error("reading /dev/fuse failed: errno {}", errno);
                        }
                        session.deviceGone();
                        return;
                    }
                    try {
                        session.dispatch(in, n, reply, reads, this);
                    } finally {
                        serving = 0;
                    }
                }
            }
        }
    }

    /** No thread is left reading requests: one more, while there may be more. */
    private void grow() {
        synchronized (workers) {
            if (workers.size() >= maxThreads || session.closed()) {
                return;
            }
            Worker w = new Worker(workers.size());
            workers.add(w);
            w.thread.start();
            if (workers.size() == maxThreads) {
                LOG.warn("all {} FUSE threads are busy (a slow store?): requests wait for one", maxThreads);
            }
        }
    }
}
