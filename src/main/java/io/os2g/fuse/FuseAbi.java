package io.os2g.fuse;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.StructLayout;

/**
 * The kernel structs os2g reads and writes, as {@code include/uapi/linux/fuse.h} declares them, one
 * named layout each, and the byte offset of every field used. The layout is the same on every
 * architecture (fixed-width fields, naturally aligned); a field's comment names the protocol minor
 * that brought it where it is younger than 7.9. Requests and replies address fields by these names;
 * the offsets are constants, so using them costs what a literal does.
 */
final class FuseAbi {

    private FuseAbi() {
    }

    private static MemoryLayout u32(String name) {
        return JAVA_INT.withName(name);
    }

    private static MemoryLayout u64(String name) {
        return JAVA_LONG.withName(name);
    }

    private static MemoryLayout u16(String name) {
        return JAVA_SHORT.withName(name);
    }

    private static StructLayout struct(String name, MemoryLayout... fields) {
        return MemoryLayout.structLayout(fields).withName(name);
    }

    private static long at(StructLayout struct, String field) {
        return struct.byteOffset(PathElement.groupElement(field));
    }

    /** fuse_in_header: before every request. */
    static final class InHeader {
        static final StructLayout LAYOUT = struct("fuse_in_header", u32("len"), u32("opcode"), u64("unique"), u64("nodeid"),
                u32("uid"), u32("gid"), u32("pid"), u16("total_extlen"), u16("padding"));
        static final long LEN = at(LAYOUT, "len"), OPCODE = at(LAYOUT, "opcode"), UNIQUE = at(LAYOUT, "unique"),
                NODEID = at(LAYOUT, "nodeid"), PID = at(LAYOUT, "pid");
        static final int SIZE = (int) LAYOUT.byteSize();
    }

    /** fuse_out_header: before every reply; {@code error} is a negated errno. */
    static final class OutHeader {
        static final StructLayout LAYOUT = struct("fuse_out_header", u32("len"), u32("error"), u64("unique"));
        static final long LEN = at(LAYOUT, "len"), ERROR = at(LAYOUT, "error"), UNIQUE = at(LAYOUT, "unique");
        static final int SIZE = (int) LAYOUT.byteSize();
    }

    /** fuse_attr: a node's attributes. */
    static final class Attr {
        static final StructLayout LAYOUT = struct("fuse_attr", u64("ino"), u64("size"), u64("blocks"), u64("atime"), u64("mtime"),
                u64("ctime"), u32("atimensec"), u32("mtimensec"), u32("ctimensec"), u32("mode"), u32("nlink"), u32("uid"), u32("gid"),
                u32("rdev"), u32("blksize"), u32("flags"));
        static final long INO = at(LAYOUT, "ino"), SIZE_BYTES = at(LAYOUT, "size"), BLOCKS = at(LAYOUT, "blocks"),
                ATIME = at(LAYOUT, "atime"), MTIME = at(LAYOUT, "mtime"), CTIME = at(LAYOUT, "ctime"),
                ATIMENSEC = at(LAYOUT, "atimensec"), MTIMENSEC = at(LAYOUT, "mtimensec"), CTIMENSEC = at(LAYOUT, "ctimensec"),
                MODE = at(LAYOUT, "mode"), NLINK = at(LAYOUT, "nlink"), UID = at(LAYOUT, "uid"), GID = at(LAYOUT, "gid"),
                BLKSIZE = at(LAYOUT, "blksize");
        static final int SIZE = (int) LAYOUT.byteSize();
    }

    /** fuse_entry_out: LOOKUP, MKDIR, CREATE (first part) and each READDIRPLUS record; nodeid 0 caches a miss. */
    static final class EntryOut {
        static final StructLayout LAYOUT = struct("fuse_entry_out", u64("nodeid"), u64("generation"), u64("entry_valid"),
                u64("attr_valid"), u32("entry_valid_nsec"), u32("attr_valid_nsec"), Attr.LAYOUT.withName("attr"));
        static final long NODEID = at(LAYOUT, "nodeid"), ENTRY_VALID = at(LAYOUT, "entry_valid"), ATTR_VALID = at(LAYOUT, "attr_valid"),
                ENTRY_VALID_NSEC = at(LAYOUT, "entry_valid_nsec"), ATTR_VALID_NSEC = at(LAYOUT, "attr_valid_nsec"),
                ATTR = at(LAYOUT, "attr");
        static final int SIZE = (int) LAYOUT.byteSize();
    }

    /** fuse_attr_out: GETATTR and SETATTR. */
    static final class AttrOut {
        static final StructLayout LAYOUT = struct("fuse_attr_out", u64("attr_valid"), u32("attr_valid_nsec"), u32("dummy"),
                Attr.LAYOUT.withName("attr"));
        static final long ATTR_VALID = at(LAYOUT, "attr_valid"), ATTR_VALID_NSEC = at(LAYOUT, "attr_valid_nsec"),
                ATTR = at(LAYOUT, "attr");
        static final int SIZE = (int) LAYOUT.byteSize();
    }

    /** fuse_open_out: OPEN, and CREATE after its entry; backing_id (7.40, was padding) names a passthrough file. */
    static final class OpenOut {
        static final StructLayout LAYOUT = struct("fuse_open_out", u64("fh"), u32("open_flags"), u32("backing_id"));
        static final long FH = at(LAYOUT, "fh"), OPEN_FLAGS = at(LAYOUT, "open_flags"), BACKING_ID = at(LAYOUT, "backing_id");
        static final int SIZE = (int) LAYOUT.byteSize();
    }

    /** fuse_getattr_in (7.9); {@code GETATTR_FH} in getattr_flags says fh is set. */
    static final class GetattrIn {
        static final StructLayout LAYOUT = struct("fuse_getattr_in", u32("getattr_flags"), u32("dummy"), u64("fh"));
        static final long GETATTR_FLAGS = at(LAYOUT, "getattr_flags"), FH = at(LAYOUT, "fh");
        static final int GETATTR_FH = 1;
    }

    /** fuse_setattr_in: {@code valid} says which fields are set (FATTR_*). */
    static final class SetattrIn {
        static final StructLayout LAYOUT = struct("fuse_setattr_in", u32("valid"), u32("padding"), u64("fh"), u64("size"),
                u64("lock_owner"), u64("atime"), u64("mtime"), u64("ctime"), u32("atimensec"), u32("mtimensec"), u32("ctimensec"),
                u32("mode"), u32("unused4"), u32("uid"), u32("gid"), u32("unused5"));
        static final long VALID = at(LAYOUT, "valid"), FH = at(LAYOUT, "fh"), SIZE_BYTES = at(LAYOUT, "size"), MODE = at(LAYOUT, "mode");
    }

    /** fuse_open_in: OPEN. */
    static final class OpenIn {
        static final StructLayout LAYOUT = struct("fuse_open_in", u32("flags"), u32("open_flags"));
        static final long FLAGS = at(LAYOUT, "flags");
    }

    /** fuse_create_in (7.12 added umask), then the name. */
    static final class CreateIn {
        static final StructLayout LAYOUT = struct("fuse_create_in", u32("flags"), u32("mode"), u32("umask"), u32("open_flags"));
        static final long FLAGS = at(LAYOUT, "flags"), MODE = at(LAYOUT, "mode"), UMASK = at(LAYOUT, "umask");
        static final int SIZE = (int) LAYOUT.byteSize();
    }

    /** fuse_mkdir_in, then the name. */
    static final class MkdirIn {
        static final StructLayout LAYOUT = struct("fuse_mkdir_in", u32("mode"), u32("umask"));
        static final long MODE = at(LAYOUT, "mode"), UMASK = at(LAYOUT, "umask");
        static final int SIZE = (int) LAYOUT.byteSize();
    }

    /** fuse_rename_in (RENAME) and fuse_rename2_in (RENAME2, 7.23), then the two names. */
    static final class RenameIn {
        static final StructLayout LAYOUT = struct("fuse_rename_in", u64("newdir"));
        static final StructLayout LAYOUT2 = struct("fuse_rename2_in", u64("newdir"), u32("flags"), u32("padding"));
        static final long NEWDIR = at(LAYOUT, "newdir"), FLAGS2 = at(LAYOUT2, "flags");
        static final int SIZE = (int) LAYOUT.byteSize(), SIZE2 = (int) LAYOUT2.byteSize();
    }

    /** fuse_read_in: READ and READDIR(PLUS). */
    static final class ReadIn {
        static final StructLayout LAYOUT = struct("fuse_read_in", u64("fh"), u64("offset"), u32("size"), u32("read_flags"),
                u64("lock_owner"), u32("flags"), u32("padding"));
        static final long FH = at(LAYOUT, "fh"), OFFSET = at(LAYOUT, "offset"), SIZE_BYTES = at(LAYOUT, "size");
    }

    /** fuse_write_in, then the data. */
    static final class WriteIn {
        static final StructLayout LAYOUT = struct("fuse_write_in", u64("fh"), u64("offset"), u32("size"), u32("write_flags"),
                u64("lock_owner"), u32("flags"), u32("padding"));
        static final long FH = at(LAYOUT, "fh"), OFFSET = at(LAYOUT, "offset"), SIZE_BYTES = at(LAYOUT, "size");
        static final int SIZE = (int) LAYOUT.byteSize();
    }

    /** fuse_write_out. */
    static final class WriteOut {
        static final StructLayout LAYOUT = struct("fuse_write_out", u32("size"), u32("padding"));
        static final long SIZE_BYTES = at(LAYOUT, "size");
        static final int SIZE = (int) LAYOUT.byteSize();
    }

    /** fuse_release_in (RELEASE, RELEASEDIR), fuse_flush_in, fuse_fsync_in: the handle first in each. */
    static final class HandleIn {
        static final StructLayout RELEASE = struct("fuse_release_in", u64("fh"), u32("flags"), u32("release_flags"), u64("lock_owner"));
        static final StructLayout FLUSH = struct("fuse_flush_in", u64("fh"), u32("unused"), u32("padding"), u64("lock_owner"));
        static final StructLayout FSYNC = struct("fuse_fsync_in", u64("fh"), u32("fsync_flags"), u32("padding"));
        static final long FH = at(RELEASE, "fh");
    }

    /** fuse_forget_in (FORGET); fuse_batch_forget_in and its fuse_forget_one records (BATCH_FORGET, 7.16). */
    static final class ForgetIn {
        static final StructLayout LAYOUT = struct("fuse_forget_in", u64("nlookup"));
        static final StructLayout BATCH = struct("fuse_batch_forget_in", u32("count"), u32("dummy"));
        static final StructLayout ONE = struct("fuse_forget_one", u64("nodeid"), u64("nlookup"));
        static final long NLOOKUP = at(LAYOUT, "nlookup"), COUNT = at(BATCH, "count"),
                ONE_NODEID = at(ONE, "nodeid"), ONE_NLOOKUP = at(ONE, "nlookup");
        static final int BATCH_SIZE = (int) BATCH.byteSize(), ONE_SIZE = (int) ONE.byteSize();
    }

    /** fuse_access_in, fuse_getxattr_in (then the name) and fuse_getxattr_out, fuse_interrupt_in. */
    static final class SmallIn {
        static final StructLayout ACCESS = struct("fuse_access_in", u32("mask"), u32("padding"));
        static final StructLayout GETXATTR = struct("fuse_getxattr_in", u32("size"), u32("padding"));
        static final StructLayout GETXATTR_OUT = struct("fuse_getxattr_out", u32("size"), u32("padding"));
        static final StructLayout INTERRUPT = struct("fuse_interrupt_in", u64("unique"));
        static final long ACCESS_MASK = at(ACCESS, "mask"), GETXATTR_SIZE = at(GETXATTR, "size"),
                GETXATTR_OUT_SIZE = at(GETXATTR_OUT, "size"), INTERRUPT_UNIQUE = at(INTERRUPT, "unique");
        static final int GETXATTR_IN_SIZE = (int) GETXATTR.byteSize(), GETXATTR_OUT_BYTES = (int) GETXATTR_OUT.byteSize();
    }

    /** fuse_kstatfs, the whole of fuse_statfs_out. */
    static final class StatfsOut {
        static final StructLayout LAYOUT = struct("fuse_kstatfs", u64("blocks"), u64("bfree"), u64("bavail"), u64("files"),
                u64("ffree"), u32("bsize"), u32("namelen"), u32("frsize"), u32("padding"),
                MemoryLayout.sequenceLayout(6, JAVA_INT).withName("spare"));
        static final long BLOCKS = at(LAYOUT, "blocks"), BFREE = at(LAYOUT, "bfree"), BAVAIL = at(LAYOUT, "bavail"),
                FILES = at(LAYOUT, "files"), FFREE = at(LAYOUT, "ffree"), BSIZE = at(LAYOUT, "bsize"),
                NAMELEN = at(LAYOUT, "namelen"), FRSIZE = at(LAYOUT, "frsize");
        static final int SIZE = (int) LAYOUT.byteSize();
    }

    /** fuse_dirent, then the name, padded to 8 bytes; READDIRPLUS puts a {@link EntryOut} before each. */
    static final class Dirent {
        static final StructLayout LAYOUT = struct("fuse_dirent", u64("ino"), u64("off"), u32("namelen"), u32("type"));
        static final long INO = at(LAYOUT, "ino"), OFF = at(LAYOUT, "off"), NAMELEN = at(LAYOUT, "namelen"), TYPE = at(LAYOUT, "type");
        static final int NAME = (int) LAYOUT.byteSize();
    }

    /** fuse_init_in: flags2 (7.36) only with INIT_EXT in flags. */
    static final class InitIn {
        static final StructLayout LAYOUT = struct("fuse_init_in", u32("major"), u32("minor"), u32("max_readahead"), u32("flags"),
                u32("flags2"), MemoryLayout.sequenceLayout(11, JAVA_INT).withName("unused"));
        static final long MAJOR = at(LAYOUT, "major"), MINOR = at(LAYOUT, "minor"), MAX_READAHEAD = at(LAYOUT, "max_readahead"),
                FLAGS = at(LAYOUT, "flags"), FLAGS2 = at(LAYOUT, "flags2");
    }

    /**
     * fuse_init_out: a kernel before 7.23 reads only its first 24 bytes (up to max_write); time_gran
     * 7.23, max_pages 7.28, flags2 7.36, max_stack_depth 7.40.
     */
    static final class InitOut {
        static final StructLayout LAYOUT = struct("fuse_init_out", u32("major"), u32("minor"), u32("max_readahead"), u32("flags"),
                u16("max_background"), u16("congestion_threshold"), u32("max_write"), u32("time_gran"), u16("max_pages"),
                u16("map_alignment"), u32("flags2"), u32("max_stack_depth"), MemoryLayout.sequenceLayout(6, JAVA_INT).withName("unused"));
        static final long MAJOR = at(LAYOUT, "major"), MINOR = at(LAYOUT, "minor"), MAX_READAHEAD = at(LAYOUT, "max_readahead"),
                FLAGS = at(LAYOUT, "flags"), MAX_BACKGROUND = at(LAYOUT, "max_background"),
                CONGESTION_THRESHOLD = at(LAYOUT, "congestion_threshold"), MAX_WRITE = at(LAYOUT, "max_write"),
                TIME_GRAN = at(LAYOUT, "time_gran"), MAX_PAGES = at(LAYOUT, "max_pages"), FLAGS2 = at(LAYOUT, "flags2"),
                MAX_STACK_DEPTH = at(LAYOUT, "max_stack_depth");
        /** FUSE_COMPAT_22_INIT_OUT_SIZE: what a kernel before 7.23 reads. */
        static final int COMPAT_22_SIZE = (int) TIME_GRAN;
        static final int SIZE = (int) LAYOUT.byteSize();
    }
}
