package io.os2g.agent;

import io.os2g.ErrnoException;

/** A request the agent cannot serve: unknown handle, shutting down. */
public final class AgentException extends ErrnoException {
    private final int errno;

    public AgentException(int errno, String message, Throwable cause) {
        super(message, cause);
        this.errno = errno;
    }

    @Override
    public int errno() {
        return errno;
    }
}
