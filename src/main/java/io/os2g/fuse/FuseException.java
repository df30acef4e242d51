package io.os2g.fuse;

/**
 * A failure of a {@link FuseFileSystem} operation that answers its request with one errno. A file
 * system with error types of its own maps them through {@link FuseFileSystem#errnoOf} instead.
 */
public class FuseException extends RuntimeException {

    private final int errno;

    public FuseException(int errno, String message) {
        super(message);
        this.errno = errno;
    }

    /** The positive errno the request is answered with. */
    public int errno() {
        return errno;
    }
}
