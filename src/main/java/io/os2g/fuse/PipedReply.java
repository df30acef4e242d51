package io.os2g.fuse;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * One session thread's {@link ReadReply}: the reply is assembled in a pipe (its header written, the
 * file's pages spliced in by reference, memory copied in) and spliced to /dev/fuse whole, so the
 * kernel copies each page once, into the reader's page cache. A pipe left holding part of a reply
 * (a read that failed half-way) is replaced, never reused.
 */
final class PipedReply implements ReadReply, AutoCloseable {

    private static final int F_SETPIPE_SZ = 1031;
    private static final int F_GETPIPE_SZ = 1032;
    private static final int LARGEST_READ = 1 << 20;
    private static final int HEADER = FuseAbi.OutHeader.SIZE;

    private final int device;
    /** The session whose READs this answers; null for replies to READs another process forwarded. */
    private final FuseSession session;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment header = arena.allocate(HEADER, 8);
    private final MemorySegment offset = arena.allocate(ValueLayout.JAVA_LONG);
    private int[] pipe;
    private long unique;
    private long expected;
    private long appended;
    private boolean forwarded;
    /** The kernel interrupted this READ; what runs when it does (guarded by this). */
    private boolean interrupted;
    private Runnable onInterrupt;
    /** What waits for this pipe to refer to no file page (see {@link #whenDone}). */
    private final List<Runnable> whenDone = new ArrayList<>(2);

    private final int pageSize;
    /** The largest read this pipe holds (pipes may be smaller than asked for: per-user limits). */
    private int holds;

    PipedReply(int device, FuseSession session, int pageSize) {
        this.device = device;
        this.session = session;
        this.pageSize = pageSize;
        this.pipe = open();
        this.holds = largestRead(Native.fcntl(pipe[0], F_GETPIPE_SZ, 0), pageSize);
    }

    /** The largest READ whose reply this pipe holds; a larger one is to be answered from memory. */
    int holds() {
        return holds;
    }

    /**
     * The largest read a reply pipe holds with its header, for pages of {@code pageSize}: 1 MiB where
     * pipes may grow to 2 MiB (CAP_SYS_RESOURCE or a raised /proc/sys/fs/pipe-max-size), else 512 KiB
     * in the default 1 MiB.
     */
    static int largestRead(int pageSize) {
        int[] probe = open();
        try {
            return largestRead(Native.fcntl(probe[0], F_GETPIPE_SZ, 0), pageSize);
        } finally {
            Native.close(probe[0]);
            Native.close(probe[1]);
        }
    }

    /**
     * The largest read a pipe of {@code capacity} bytes holds: a pipe has capacity / page slots, a page
     * each; the header takes one, and a splice that does not start on a page boundary one more.
     */
    static int largestRead(int capacity, int pageSize) {
        return Math.max(pageSize, Math.min(LARGEST_READ, Integer.highestOneBit(capacity - 2 * pageSize)));
    }

    private static int[] open() {
        int[] fds = Native.pipe();
        if (fds == null) {
            throw new IllegalStateException("pipe2 failed: errno " + Native.errno());
        }
        if (Native.fcntl(fds[1], F_SETPIPE_SZ, 2 * LARGEST_READ) < 0) {
            Native.fcntl(fds[1], F_SETPIPE_SZ, LARGEST_READ);
        }
        return fds;
    }

    void start(long requestUnique) {
        done(); // a caller that registered after the last send or discard
        synchronized (this) {
            unique = requestUnique;
            interrupted = false;
            onInterrupt = null;
        }
        expected = -1;
        appended = 0;
        forwarded = false;
    }

    @Override
    public void whenInterrupted(Runnable action) {
        synchronized (this) {
            if (!interrupted) {
                onInterrupt = action;
                return;
            }
        }
        action.run();
    }

    /**
     * The kernel interrupted READ {@code requestUnique}: runs what waits for that, if this pipe serves
     * it; whether it does.
     */
    boolean interrupt(long requestUnique) {
        Runnable action;
        synchronized (this) {
            if (requestUnique != unique) {
                return false;
            }
            interrupted = true;
            action = onInterrupt;
            onInterrupt = null;
        }
        if (action != null) {
            action.run();
        }
        return true;
    }

    @Override
    public ForwardedRead forward() {
        if (expected >= 0 || session == null) {
            throw new IllegalStateException(session == null ? "a forwarded reply cannot be forwarded again" : "forward() after begin()");
        }
        forwarded = true;
        return session.forwarded(unique);
    }

    /** Whether another holder of the descriptor answers this READ. */
    boolean forwarded() {
        return forwarded;
    }

    @Override
    public void begin(int length) {
        if (expected >= 0 || forwarded) {
            throw new IllegalStateException("begin() twice in one reply, or after forward()");
        }
        if (length > holds) {
            // it would fill the pipe and wait for ever for a reader: the session answers such READs from
            // memory; another holder of the descriptor (a smaller pipe than the session's) fails it
            throw new ReplyFailed("a reply of " + length + " bytes in a pipe that holds " + holds, 0);
        }
        header.set(ValueLayout.JAVA_INT_UNALIGNED, FuseAbi.OutHeader.LEN, HEADER + length);
        header.set(ValueLayout.JAVA_INT_UNALIGNED, FuseAbi.OutHeader.ERROR, 0);
        header.set(ValueLayout.JAVA_LONG_UNALIGNED, FuseAbi.OutHeader.UNIQUE, unique);
        if (Native.write(pipe[1], header) != HEADER) {
            throw new ReplyFailed("writing a reply header to its pipe", Native.errno());
        }
        expected = length;
    }

    @Override
    public void splice(int fd, long from, int length) {
        checkRoom(length);
        offset.set(ValueLayout.JAVA_LONG, 0, from);
        long left = length;
        while (left > 0) {
            long n = Native.splice(fd, offset, pipe[1], left, 0);
            if (n <= 0) {
                throw new ReplyFailed("splicing " + length + " bytes into a reply", n == 0 ? 0 : Native.errno());
            }
            left -= n;
        }
        appended += length;
    }

    @Override
    public boolean splice(PipeFiller filler, long length) {
        checkRoom(length);
        if (!filler.fill(pipe[1])) {
            return false;
        }
        appended += length;
        return true;
    }

    @Override
    public void restart() {
        appended = 0;
        if (expected >= 0) {
            discard();
        }
    }

    @Override
    public void whenDone(Runnable action) {
        if (expected < 0) {
            action.run();
        } else {
            whenDone.add(action);
        }
    }

    /** The pipe holds no file pages now: runs what waited for that, each once, all of them even if one throws. */
    private void done() {
        RuntimeException failed = null;
        for (int i = 0; i < whenDone.size(); i++) {
            try {
                whenDone.get(i).run();
            } catch (RuntimeException e) {
                if (failed == null) {
                    failed = e;
                } else {
                    failed.addSuppressed(e);
                }
            }
        }
        whenDone.clear();
        if (failed != null) {
            throw failed;
        }
    }

    @Override
    public void copy(MemorySegment bytes) {
        checkRoom(bytes.byteSize());
        long done = 0;
        while (done < bytes.byteSize()) {
            long n = Native.write(pipe[1], bytes.asSlice(done));
            if (n <= 0) {
                throw new ReplyFailed("copying " + bytes.byteSize() + " bytes into a reply", Native.errno());
            }
            done += n;
        }
        appended += bytes.byteSize();
    }

    private void checkRoom(long length) {
        if (expected < 0 || appended + length > expected) {
            throw new IllegalStateException("reply bytes beyond the length begun: " + (appended + length) + " > " + expected);
        }
    }

    /** Whether begin() was called: the reply is then this pipe's to send (or to discard). */
    boolean begun() {
        return expected >= 0;
    }

    /** Sends the assembled reply; false if the kernel had dropped the request (interrupted). */
    boolean send() {
        if (appended != expected) {
            discard();
            throw new IllegalStateException("reply of " + appended + " bytes where " + expected + " were begun");
        }
        long n = Native.splice(pipe[0], MemorySegment.NULL, device, HEADER + expected, 0);
        // the kernel copied what it took into the reader's pages during the call
        if (n == HEADER + expected) {
            expected = -1;
            done();
        } else {
            int errno = Native.errno();
            discard(); // whatever the kernel did not take is not sent later as part of another reply
            if (n < 0 && errno == FuseErrno.ENOENT) {
                return false;
            }
            throw new ReplyFailed("splicing a reply to /dev/fuse", errno);
        }
        return true;
    }

    /** Drops a reply begun but not sent: the pipe is replaced. */
    void discard() {
        Native.close(pipe[0]);
        Native.close(pipe[1]);
        pipe = open();
        holds = largestRead(Native.fcntl(pipe[0], F_GETPIPE_SZ, 0), pageSize);
        expected = -1;
        done();
    }

    @Override
    public void close() {
        Native.close(pipe[0]);
        Native.close(pipe[1]);
        expected = -1;
        try {
            done();
        } finally {
            arena.close();
        }
    }

    /** A reply could not be assembled or sent: the reader sees EIO. */
    static final class ReplyFailed extends FuseException {
        ReplyFailed(String what, int errno) {
            super(FuseErrno.EIO, what + " failed: errno " + errno);
        }
    }
}
