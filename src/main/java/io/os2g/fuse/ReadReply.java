package io.os2g.fuse;

import java.lang.foreign.MemorySegment;

/**
 * A READ's reply as the file system produces it: {@link #begin} with the length, then the bytes in
 * order, from files (by reference: the kernel copies each page once, into the reader's page cache) or
 * from memory. The bytes are the reply's as soon as a call returns: a file's pages may be reused after.
 */
public interface ReadReply {

    /** Starts the reply; exactly {@code length} bytes follow (0 at or past the end of the file). */
    void begin(int length);

    /** Appends {@code length} bytes of the file open as {@code fd}, from {@code offset}. */
    void splice(int fd, long offset, int length);

    /** Appends bytes from memory. */
    void copy(MemorySegment bytes);
}
