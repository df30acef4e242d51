package io.os2g.staging;

import io.os2g.Errno;
import io.os2g.ErrnoException;

/** The staging region cannot be set up, or had no space for a fetch before its deadline. */
public final class StagingException extends ErrnoException {

    public StagingException(String message) {
        super(message, null);
    }

    public StagingException(String message, Throwable cause) {
        super(message, cause);
    }

    @Override
    public int errno() {
        return Errno.EIO;
    }
}
