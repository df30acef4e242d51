package io.os2g;

/** The POSIX error numbers os2g returns to applications (Linux values). */
public final class Errno {
    public static final int EPERM = 1;
    public static final int ENOENT = 2;
    public static final int EINTR = 4;
    public static final int EIO = 5;
    public static final int E2BIG = 7;
    public static final int EBADF = 9;
    public static final int EAGAIN = 11;
    public static final int ENOMEM = 12;
    public static final int EACCES = 13;
    public static final int EBUSY = 16;
    public static final int EEXIST = 17;
    public static final int ENOTDIR = 20;
    public static final int EISDIR = 21;
    public static final int EINVAL = 22;
    public static final int EFBIG = 27;
    public static final int EROFS = 30;
    public static final int ERANGE = 34;
    public static final int ENAMETOOLONG = 36;
    public static final int ENOTEMPTY = 39;
    public static final int ENODATA = 61;
    public static final int EOPNOTSUPP = 95;
    public static final int ETIMEDOUT = 110;
    public static final int ESTALE = 116;

    private Errno() {
    }

    /** The symbolic name of {@code errno} ("EIO"), or its number for one os2g does not name. */
    public static String name(int errno) {
        return switch (errno) {
            case EPERM -> "EPERM";
            case ENOENT -> "ENOENT";
            case EBUSY -> "EBUSY";
            case EEXIST -> "EEXIST";
            case ENOTEMPTY -> "ENOTEMPTY";
            case EOPNOTSUPP -> "EOPNOTSUPP";
            case EINTR -> "EINTR";
            case EIO -> "EIO";
            case E2BIG -> "E2BIG";
            case EFBIG -> "EFBIG";
            case ERANGE -> "ERANGE";
            case EBADF -> "EBADF";
            case EAGAIN -> "EAGAIN";
            case ENOMEM -> "ENOMEM";
            case EACCES -> "EACCES";
            case ENOTDIR -> "ENOTDIR";
            case EISDIR -> "EISDIR";
            case EINVAL -> "EINVAL";
            case EROFS -> "EROFS";
            case ENAMETOOLONG -> "ENAMETOOLONG";
            case ENODATA -> "ENODATA";
            case ESTALE -> "ESTALE";
            case ETIMEDOUT -> "ETIMEDOUT";
            default -> Integer.toString(errno);
        };
    }
}
