package io.os2g;

/**
 * A failure that reaches an application as one errno. Every package throws its own subclass with
 * context (bucket, key, range) attached where the failure is made; the FUSE shim only reads
 * {@link #errno()}.
 */
public abstract class ErrnoException extends RuntimeException {
    protected ErrnoException(String message, Throwable cause) {
        super(message, cause);
    }

    /** The positive errno the application sees. */
    public abstract int errno();
}
