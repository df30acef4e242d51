package io.os2g.fuse;

/**
 * The Linux errno values this binding answers requests with or reads back from its own system calls
 * (the kernel's FUSE protocol carries Linux's numbers, negated, in a reply's header).
 */
public final class FuseErrno {
    public static final int ENOENT = 2;
    /** A READ the kernel interrupted (its reader got a signal). */
    public static final int EINTR = 4;
    public static final int EIO = 5;
    /** To an INTERRUPT: ask again (its request is not seen yet). From read(2): nothing to read. */
    public static final int EAGAIN = 11;
    /** From read(2) of /dev/fuse: the mount is gone. */
    public static final int ENODEV = 19;
    public static final int EPERM = 1;
    public static final int EROFS = 30;
    /** An operation the file system does not have (a write-enabled mount: setxattr, fallocate, tmpfiles). */
    public static final int EOPNOTSUPP = 95;
    public static final int ERANGE = 34;
    /** An opcode os2g does not serve: the kernel stops sending most of them. */
    public static final int ENOSYS = 38;
    public static final int ENODATA = 61;
    /** An INIT os2g cannot speak. */
    public static final int EPROTO = 71;

    private FuseErrno() {
    }
}
