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
     * (one that may hold exactly this file's bytes at their own offsets), the kernel reads that file
     * itself (FUSE passthrough) where the mount can ({@link #passthroughUsable}) and the file verifies:
     * then no READ comes for this open. Null for none.
     */
    record Opened(long handle, Backing backing, boolean directIo) {
        /** An open whose pages the kernel keeps across opens (until the attributes show a change). */
        public static Opened handle(long handle) {
            return new Opened(handle, null, false);
        }

        /** An open read past the page cache: every read reaches the file system (a fresh snapshot, a control file). */
        public static Opened direct(long handle) {
            return new Opened(handle, null, true);
        }

        /** An open the kernel reads from {@code backing} where it can, else as {@link #handle}. */
        public static Opened backedBy(long handle, Backing backing) {
            return new Opened(handle, backing, false);
        }
    }

    /**
     * A file that may hold exactly an open file's bytes at their own offsets, offered for the kernel to
     * read itself (FUSE passthrough): where it is, found without touching it, and the file verified on
     * demand.
     */
    interface Backing {
        /** Where the file is: the same path holds the same bytes. */
        Path path();

        /** The file, its bytes verified now (or remembered as verified while unchanged); null when there is no good copy. */
        BackingFile verify();

        /** The kernel reads {@code kept} again, unchanged since it was verified. */
        void reused(BackingFile kept);
    }

    /**
     * A backing file as it was verified: a file still at that inode, size and change time holds the same
     * bytes (a write, a truncate, a touch or an unlink changes the change time); its modification time
     * then goes with it for the file system's own use.
     */
    record BackingFile(Path path, long inode, long size, long changedNanos, long modifiedMillis) {
        /** Whether a file found at {@code inode}, {@code size} and {@code changedNanos} is still this one. */
        public boolean sameAs(long inode, long size, long changedNanos) {
            return this.inode == inode && this.size == size && this.changedNanos == changedNanos;
        }
    }

    /** A file CREATE made and opened. */
    record Created(Attributes attributes, Opened opened) {
    }

    /**
     * What a SETATTR asks to change: {@code valid} holds the kernel's FATTR_* bits ({@link #SIZE},
     * {@link #ATIME}, ...); the fields it does not name are not set.
     *
     * @param handle the open file it goes through (ftruncate, futimens), or -1
     */
    record Changes(int valid, long handle, long size, int mode) {
        public static final int MODE = 1, UID = 1 << 1, GID = 1 << 2, SIZE = 1 << 3, ATIME = 1 << 4, MTIME = 1 << 5,
                FH = 1 << 6, ATIME_NOW = 1 << 7, MTIME_NOW = 1 << 8, LOCKOWNER = 1 << 9, CTIME = 1 << 10,
                KILL_SUIDGID = 1 << 11;

        /** Whether it asks for any of {@code bits}. */
        public boolean any(int bits) {
            return (valid & bits) != 0;
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
     * {@link #open(long, int)}, told which process asks: {@code pid} is the calling thread's id as the
     * mount's pid namespace numbers it (0 when the caller is not in it).
     */
    default Opened open(long node, int flags, int pid) {
        return open(node, flags);
    }

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

    /**
     * Whether the mount changes anything but control files: then FLUSH and FSYNC reach the file system,
     * and what it cannot do answers EPERM or EOPNOTSUPP rather than EROFS.
     */
    default boolean writable() {
        return false;
    }

    /** Writes {@code data} at {@code offset}; the bytes taken. */
    default int write(long node, long handle, long offset, MemorySegment data) {
        throw new ReadOnly();
    }

    /** Applies {@code changes}; returns the node's attributes after them. */
    default Attributes setattr(long node, Changes changes) {
        throw new ReadOnly();
    }

    /** Creates and opens file {@code name} in {@code parent} for {@code pid} (see {@link #open(long, int, int)}). */
    default Created create(long parent, String name, int flags, int mode, int pid) {
        throw new ReadOnly();
    }

    default Attributes mkdir(long parent, String name, int mode) {
        throw new ReadOnly();
    }

    default void unlink(long parent, String name) {
        throw new ReadOnly();
    }

    default void rmdir(long parent, String name) {
        throw new ReadOnly();
    }

    /** Renames; {@code flags} are renameat2(2)'s (RENAME_NOREPLACE 1, RENAME_EXCHANGE 2). */
    default void rename(long parent, String name, long newParent, String newName, int flags) {
        throw new ReadOnly();
    }

    /** A descriptor of open {@code handle} is being closed by {@code pid} (each close(2) of each descriptor). */
    default void flush(long node, long handle, int pid) {
    }

    /** fsync(2) of open {@code handle}. */
    default void fsync(long node, long handle) {
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
