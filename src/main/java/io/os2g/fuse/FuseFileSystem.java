package io.os2g.fuse;

import java.util.List;

/**
 * A read-only file system as the FUSE kernel protocol sees it: nodes by number (1 is the root), looked
 * up by name in a parent. Every method may throw an {@link io.os2g.ErrnoException} (or any runtime
 * exception, which answers EIO); the session turns it into the reply's errno.
 */
public interface FuseFileSystem {

    /** A node's attributes, as stat(2) shows them. */
    record Attributes(long node, long size, int mode, int nlink, int uid, int gid, long mtimeMillis) {
    }

    /** One directory entry. */
    record Entry(String name, long node, int mode) {
    }

    /** The entry {@code name} in directory {@code parent}; ENOENT when there is none. */
    Attributes lookup(long parent, String name);

    Attributes getattr(long node);

    /**
     * An open file: its handle comes back with each read and the release. With a {@code backing}
     * descriptor (a file holding exactly this file's bytes at their own offsets), the kernel reads that
     * file itself (FUSE passthrough) where the mount may: then no READ comes for this open. The
     * session closes the descriptor once the kernel has registered it; -1 for none.
     */
    record Opened(long handle, int backing) {
        public static Opened handle(long handle) {
            return new Opened(handle, -1);
        }
    }

    Opened open(long node, int flags);

    /**
     * Up to {@code size} bytes of the file from {@code offset} (fewer at its end), into {@code reply}:
     * {@link ReadReply#begin} with their length, then the bytes.
     */
    void read(long node, long handle, long offset, int size, ReadReply reply);

    void release(long node, long handle);

    /** The directory's entries, "." and ".." included, in a stable order. */
    List<Entry> list(long directory);
}
