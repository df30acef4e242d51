package io.os2g.fuse;

/**
 * The Linux errno values this binding answers requests with or reads back from its own system calls
 * (the kernel's FUSE protocol carries Linux's numbers, negated, in a reply's header).
 */
public final class FuseErrno {
    public static final int ENOENT = 2;
    public static final int EINTR = 4;
    public static final int EIO = 5;
    public static final int EAGAIN = 11;
    public static final int ENODEV = 19;
    public static final int EROFS = 30;
    public static final int ERANGE = 34;
    public static final int ENOSYS = 38;
    public static final int ENODATA = 61;

    private FuseErrno() {
    }
}
