package io.os2g.fuse;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Replies written to a mount's /dev/fuse by a process other than its session: one that was given the
 * session's descriptor (the same open file: the kernel looks a reply's request up on that file's list)
 * and answers the READs the session delegated ({@link ReadReply#delegate}).
 */
public final class FuseReplies {

    private FuseReplies() {
    }

    /**
     * Answers READ {@code unique} with {@code bytes}; false when the kernel no longer waits for it (the
     * reader was interrupted). {@code bytes} is native memory, e.g. a staging mapping.
     */
    public static boolean read(int device, long unique, MemorySegment bytes) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment header = arena.allocate(16, 8);
            header.set(ValueLayout.JAVA_INT, 0, (int) (16 + bytes.byteSize()));
            header.set(ValueLayout.JAVA_LONG, 8, unique);
            MemorySegment iov = arena.allocate(32, 8);
            iov.set(ValueLayout.ADDRESS, 0, header);
            iov.set(ValueLayout.JAVA_LONG, 8, 16);
            iov.set(ValueLayout.ADDRESS, 16, bytes);
            iov.set(ValueLayout.JAVA_LONG, 24, bytes.byteSize());
            if (Native.writev(device, iov, 2) < 0) {
                if (Native.errno() == Native.ENOENT) {
                    return false;
                }
                throw new PipedReply.ReplyFailed("a delegated READ reply", Native.errno());
            }
            return true;
        }
    }
}
