package io.os2g.link;

import io.os2g.ErrnoException;

/** A request the link could not carry (agent gone, timed out) or that the agent answered with an errno. */
public final class LinkException extends ErrnoException {
    private final int errno;

    public LinkException(int errno, String message) {
        super(message, null);
        this.errno = errno;
    }

    @Override
    public int errno() {
        return errno;
    }
}
