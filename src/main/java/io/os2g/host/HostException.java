package io.os2g.host;

import io.os2g.ErrnoException;

/** What the shim answers an operation with one errno for: a read it cannot serve, a write it refuses. */
final class HostException extends ErrnoException {

    private final int errno;

    HostException(int errno, String message) {
        this(errno, message, null);
    }

    HostException(int errno, String message, Throwable cause) {
        super(message, cause);
        this.errno = errno;
    }

    @Override
    public int errno() {
        return errno;
    }
}
