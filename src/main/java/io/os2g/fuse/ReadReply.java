package io.os2g.fuse;

import java.lang.foreign.MemorySegment;

/**
 * A READ's reply as the file system produces it: {@link #begin} with the length, then the bytes in
 * order, from files (by reference: the kernel copies each page once, into the reader's page cache) or
 * from memory. Bytes copied in are the reply's as soon as the call returns; bytes spliced in are
 * references to the file's pages until the reply is sent, so whoever may overwrite those pages waits
 * for {@link #whenDone}.
 */
public interface ReadReply {

    /** Starts the reply; exactly {@code length} bytes follow (0 at or past the end of the file). */
    void begin(int length);

    /** Appends {@code length} bytes of the file open as {@code fd}, from {@code offset}. */
    void splice(int fd, long offset, int length);

    /** Appends bytes from memory. */
    void copy(MemorySegment bytes);

    /** Puts bytes into a pipe by reference (splice from a file the caller knows how to address). */
    interface PipeFiller {
        /** Moves exactly the bytes promised into {@code pipe}; false if it could not (it may have moved some). */
        boolean fill(int pipe);
    }

    /**
     * Appends {@code length} bytes that {@code filler} splices into the reply itself; false when it could
     * not, and the reply must then be started over ({@link #restart}).
     */
    boolean splice(PipeFiller filler, long length);

    /** Drops what this reply holds so far; {@link #begin} again. */
    void restart();

    /**
     * Runs {@code action} once this reply refers to no file page any more: after it was sent, or
     * dropped ({@link #restart}, a failure). Runs it at once if no reply is being assembled.
     */
    void whenDone(Runnable action);

    /**
     * Leaves this READ to be answered by another holder of this mount's /dev/fuse descriptor (another
     * process lent it: {@link DeviceHandoff}, {@link LentDeviceReplies}), instead of {@link #begin}. The kernel
     * matches a reply to its request by {@link ForwardedRead#unique} on the open file the request was read
     * from, so the holder must have that same open file. Null when this READ must be answered here (one
     * larger than a reply pipe, assembled in memory): then {@link #begin} as usual.
     */
    ForwardedRead forward();

    /**
     * Runs {@code action} (once, on another thread) if the kernel interrupts this READ (its reader got a
     * signal) before it is answered: whatever the read waits for should then give up, and the read fail
     * with EINTR. Runs it at once if that happened already. A later call replaces the action.
     */
    void whenInterrupted(Runnable action);
}
