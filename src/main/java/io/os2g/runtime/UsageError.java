package io.os2g.runtime;

/** Something the user can fix: reported as one line, exit code 2, no stack trace. */
public final class UsageError extends RuntimeException {
    public UsageError(String message) {
        super(message);
    }
}
