package io.os2g.fuse;

import java.lang.foreign.MemorySegment;

/**
 * A {@link ReadReply} assembled in memory rather than in a pipe: for a READ larger than a reply pipe
 * holds (the kernel should not send one after INIT; a kernel without max_pages may). The session asks
 * the file system for it a pipe's worth at a time, each piece appended here, then writes the whole
 * reply at once. Nothing refers to file pages: what is appended is copied.
 */
final class MemoryReply implements ReadReply {

    private final MemorySegment data;
    private long pieceStart;
    private long expected = -1;
    private long appended;
    /** The serving thread's pipe, which learns of the READ's interruption. */
    private final PipedReply interruptions;

    /** @param data room for the whole READ */
    MemoryReply(MemorySegment data, PipedReply interruptions) {
        this.data = data;
        this.interruptions = interruptions;
    }

    /** Starts the next piece, at {@code offset} bytes into the reply. */
    void piece(long offset) {
        pieceStart = offset;
        expected = -1;
        appended = 0;
    }

    /** The bytes of the piece begun (0 before {@link #begin}). */
    long pieceLength() {
        return Math.max(expected, 0);
    }

    boolean complete() {
        return expected >= 0 && appended == expected;
    }

    @Override
    public void begin(int length) {
        if (expected >= 0 || pieceStart + length > data.byteSize()) {
            throw new IllegalStateException("begin() twice in a piece, or past the READ's size");
        }
        expected = length;
    }

    @Override
    public void splice(int fd, long offset, int length) {
        MemorySegment target = room(length);
        long done = 0;
        while (done < length) {
            long n = Native.pread(fd, target.asSlice(done), offset + done);
            if (n <= 0) {
                throw new PipedReply.ReplyFailed("reading " + length + " bytes of a reply", n == 0 ? 0 : Native.errno());
            }
            done += n;
        }
        appended += length;
    }

    @Override
    public void copy(MemorySegment bytes) {
        MemorySegment.copy(bytes, 0, room(bytes.byteSize()), 0, bytes.byteSize());
        appended += bytes.byteSize();
    }

    /** Page references cannot go into memory: the caller copies instead. */
    @Override
    public boolean splice(PipeFiller filler, long length) {
        return false;
    }

    @Override
    public void restart() {
        expected = -1;
        appended = 0;
    }

    @Override
    public void whenDone(Runnable action) {
        action.run(); // copied: no page is referred to
    }

    @Override
    public ForwardedRead forward() {
        return null;
    }

    @Override
    public void whenInterrupted(Runnable action) {
        interruptions.whenInterrupted(action);
    }

    private MemorySegment room(long length) {
        if (expected < 0 || appended + length > expected) {
            throw new IllegalStateException("reply bytes beyond the length begun: " + (appended + length) + " > " + expected);
        }
        return data.asSlice(pieceStart + appended, length);
    }
}
