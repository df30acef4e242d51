package io.os2g.fuse;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;

/**
 * READ replies written to a mount's /dev/fuse by a process other than its session: one that was lent
 * the session's descriptor ({@link DeviceHandoff}: the same open file, on whose list the kernel looks a
 * reply's request up) and answers the READs the session forwarded ({@link ReadReply#forward}). Replies
 * are built as the session builds its own, in a pipe, taken from a pool so any thread may answer.
 */
public final class LentDeviceReplies implements AutoCloseable {

    private final int device;
    private final ConcurrentLinkedQueue<PipedReply> pipes = new ConcurrentLinkedQueue<>();
    /** Replies hold it shared, {@link #close} exclusive: a closed descriptor's number may be reused. */
    private final ReentrantReadWriteLock open = new ReentrantReadWriteLock();
    private boolean closed;

    /** Answers on {@code device}, which this now owns (closed by {@link #close}). */
    public LentDeviceReplies(int device) {
        this.device = device;
    }

    /**
     * Answers READ {@code unique} with what {@code body} puts in the reply ({@link ReadReply#begin}, then
     * the bytes); false when the kernel no longer waits for it (the reader was interrupted). A body that
     * throws sends nothing.
     */
    public boolean read(long unique, Consumer<ReadReply> body) {
        open.readLock().lock();
        try {
            return send(unique, body);
        } finally {
            open.readLock().unlock();
        }
    }

    private boolean send(long unique, Consumer<ReadReply> body) {
        if (closed) {
            throw new IllegalStateException("the lent FUSE descriptor is closed");
        }
        PipedReply reply = pipes.poll();
        if (reply == null) {
            reply = new PipedReply(device, null, Native.pageSize());
        }
        boolean sent;
        try {
            reply.start(unique);
            body.accept(reply);
            if (!reply.begun()) {
                throw new IllegalStateException("a forwarded READ was given no reply");
            }
            sent = reply.send();
        } catch (RuntimeException e) {
            if (reply.begun()) {
                reply.discard();
            }
            pipes.add(reply);
            throw e;
        }
        pipes.add(reply);
        return sent;
    }

    /** Answers READ {@code unique} with bytes in native memory (one writev). */
    public boolean read(long unique, MemorySegment bytes) {
        open.readLock().lock();
        try (Arena arena = Arena.ofConfined()) {
            if (closed) {
                throw new IllegalStateException("the lent FUSE descriptor is closed");
            }
            MemorySegment header = arena.allocate(16, 8);
            header.set(ValueLayout.JAVA_INT, FuseAbi.OutHeader.LEN, (int) (FuseAbi.OutHeader.SIZE + bytes.byteSize()));
            header.set(ValueLayout.JAVA_LONG, FuseAbi.OutHeader.UNIQUE, unique);
            MemorySegment iov = arena.allocate(32, 8);
            iov.set(ValueLayout.ADDRESS, 0, header);
            iov.set(ValueLayout.JAVA_LONG, 8, FuseAbi.OutHeader.SIZE);
            iov.set(ValueLayout.ADDRESS, 16, bytes);
            iov.set(ValueLayout.JAVA_LONG, 24, bytes.byteSize());
            return written(Native.writev(device, iov, 2), "a forwarded READ reply");
        } finally {
            open.readLock().unlock();
        }
    }

    /** Answers request {@code unique} with {@code errno}, on the descriptor {@code device}. */
    static boolean error(int device, long unique, int errno) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment header = arena.allocate(16, 8);
            header.set(ValueLayout.JAVA_INT, FuseAbi.OutHeader.LEN, FuseAbi.OutHeader.SIZE);
            header.set(ValueLayout.JAVA_INT, FuseAbi.OutHeader.ERROR, -errno);
            header.set(ValueLayout.JAVA_LONG, FuseAbi.OutHeader.UNIQUE, unique);
            return written(Native.write(device, header), "an error reply");
        }
    }

    /** Writes a whole reply, its out header included, in one write. */
    static boolean reply(int device, MemorySegment whole) {
        return written(Native.write(device, whole), "a reply");
    }

    private static boolean written(long n, String what) {
        if (n < 0) {
            if (Native.errno() == FuseErrno.ENOENT) {
                return false; // answered already, or interrupted: the kernel no longer waits
            }
            throw new PipedReply.ReplyFailed(what, Native.errno());
        }
        return true;
    }

    /** Closes the lent descriptor (the mount goes on: its session holds its own). */
    @Override
    public void close() {
        open.writeLock().lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            Native.close(device);
        } finally {
            open.writeLock().unlock();
        }
        for (PipedReply reply; (reply = pipes.poll()) != null; ) {
            reply.close();
        }
    }
}
