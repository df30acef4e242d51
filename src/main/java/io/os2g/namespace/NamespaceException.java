package io.os2g.namespace;

import io.os2g.ErrnoException;

/** A path that does not resolve: a missing name, or a file used as a directory. */
public final class NamespaceException extends ErrnoException {
    private final int errno;

    public NamespaceException(int errno, String message) {
        super(message, null);
        this.errno = errno;
    }

    @Override
    public int errno() {
        return errno;
    }
}
