package io.os2g.fuse;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;

/**
 * A file system as the FUSE kernel protocol sees it: nodes by number (1 is the root), looked up by
 * name in a parent. Every method may throw a {@link FuseException}, or an exception of the file
 * system's own that {@link #errnoOf} maps; the session turns it into the reply's errno (EIO for
 * anything unmapped, logged). What a read-only file system leaves out answers EROFS, ENODATA or
 * nothing, as the defaults say.
 */
public interface FuseFileSystem {

    /** A node's attributes, as stat(2) shows them. */
    record Attributes(long node, long size, int mode, int nlink, int uid, int gid, long mtimeMillis) {
    }

    /** One directory entry, with its attributes for READDIRPLUS ("." and ".." may have none: null). */
    record Entry(String name, Attributes attributes) {
    }

    /**
     * An open file: its handle comes back with each read and the release. With a {@code backing} file
     * (one holding exactly this file's bytes at their own offsets), the kernel reads that file itself
     * (FUSE passthrough) where the mount can ({@link #passthroughUsable}): then no READ comes
     * for this open. Null for none.
     */
    record Opened(long handle, Path backing, boolean directIo) {
        /** An open whose pages the kernel keeps across opens (until the attributes show a change). */
        public static Opened handle(long handle) {
            return new Opened(handle, null, false);
        }

        /** An open read past the page cache: every read reaches the file system (a fresh snapshot, a control file). */
        public static Opened direct(long handle) {
            return new Opened(handle, null, true);
        }

        /** An open the kernel reads from {@code backing} where it can, else as {@link #handle}. */
        public static Opened backedBy(long handle, Path backing) {
            return new Opened(handle, backing, false);
        }
    }

    /** What statfs(2) shows. */
    record FsStats(long blocks, long blocksFree, long files, long filesFree, int blockSize, int nameMax) {
    }

    /**
     * The entry {@code name} in directory {@code parent}; ENOENT when there is none. Each node returned
     * here (and each entry sent by READDIRPLUS, see {@link #entrySent}) is one lookup the kernel gives
     * back through {@link #forget}.
     */
    Attributes lookup(long parent, String name);

    /** @param handle the open file's handle when the kernel asks through one (fstat), else -1 */
    Attributes getattr(long node, long handle);

    Opened open(long node, int flags);

    /**
     * Up to {@code size} bytes of the file from {@code offset} (fewer at its end), into {@code reply}:
     * {@link ReadReply#begin} with their length, then the bytes.
     */
    void read(long node, long handle, long offset, int size, ReadReply reply);

    void release(long node, long handle);

    /** The directory's entries, "." and ".." included, in a stable order. */
    List<Entry> list(long directory);

    /**
     * Whether opens may name backing files ({@link Opened#backedBy}): true once INIT agreed to
     * passthrough, false again if the kernel then refused one for lack of privilege.
     */
    default void passthroughUsable(boolean usable) {
    }

    /** The kernel reads open {@code handle} from its backing file itself: no READ comes for it. */
    default void passthroughOpened(long handle) {
    }

    /** READDIRPLUS handed {@code entry} of {@code directory} to the kernel: one more lookup of its node. */
    default void entrySent(long directory, Entry entry) {
    }

    /** The kernel dropped {@code count} lookups of {@code node}. */
    default void forget(long node, long count) {
    }

    /** Writes {@code data} at {@code offset}; the bytes taken. */
    default int write(long node, long handle, long offset, MemorySegment data) {
        throw new ReadOnly();
    }

    /** Truncates (or extends) the file to {@code size}. */
    default void truncate(long node, long size) {
        throw new ReadOnly();
    }

    /**
     * Every node's st_blksize: the size that stdio, Python's {@code io} and many tools read in. A
     * reader's first read sets the kernel's first readahead window (two to four times it), so a small
     * first read splits a small file into several READs.
     */
    default int blockSize() {
        return 4096;
    }

    /** access(2): returns if {@code mask} (R_OK, W_OK, X_OK) is allowed. */
    default void access(long node, int mask) {
    }

    default FsStats statfs() {
        return new FsStats(0, 0, 0, 0, 4096, 255);
    }

    /** The value of extended attribute {@code name}; ENODATA when there is none. */
    default byte[] getxattr(long node, String name) {
        throw new NoData();
    }

    default List<String> listxattr(long node) {
        return List.of();
    }

    /**
     * The errno that answers a request whose operation threw {@code failure}: a {@link FuseException}'s
     * own; 0 for an exception the file system does not know (the session logs it and answers EIO). A
     * file system whose layers throw errors of their own maps them here, in one place.
     */
    default int errnoOf(RuntimeException failure) {
        return failure instanceof FuseException e ? e.errno() : 0;
    }

    /** EROFS: the answer to any change. */
    final class ReadOnly extends FuseException {
        public ReadOnly() {
            super(FuseErrno.EROFS, "read-only file system");
        }
    }

    /** ENODATA: no such extended attribute. */
    final class NoData extends FuseException {
        public NoData() {
            super(FuseErrno.ENODATA, "no such attribute");
        }
    }
}
