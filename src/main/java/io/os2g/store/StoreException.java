package io.os2g.store;

import io.os2g.Errno;
import io.os2g.ErrnoException;

/** An object-store call that failed for good, with the bucket and key it was about. */
public final class StoreException extends ErrnoException {

    /** What went wrong, as far as a user or an application needs to know. */
    public enum Kind {
        /** The key does not exist. */
        NOT_FOUND,
        /** The bucket does not exist. */
        NO_SUCH_BUCKET,
        /** The credentials were rejected (unknown key id, bad signature). */
        BAD_CREDENTIALS,
        /** The credentials' session token has expired or is no longer valid: renewing them may help. */
        EXPIRED_CREDENTIALS,
        /** The credentials are valid but not allowed this request. */
        ACCESS_DENIED,
        /** The bucket is in another region than its requests are signed for; {@link #region()} names it. */
        WRONG_REGION,
        /** The object changed since it was opened (If-Match failed). */
        CHANGED,
        /** The endpoint could not be reached (refused, unknown host, a TLS connection that broke). */
        UNREACHABLE,
        /** The endpoint's TLS certificate is not trusted (unknown CA, wrong host name, expired). */
        UNTRUSTED,
        /** The deadline passed or retries ran out on transient errors (timeouts, 5xx, SlowDown). */
        UNAVAILABLE,
        /** Anything else the server answered that os2g does not expect. */
        PROTOCOL
    }

    private final Kind kind;
    private final String region;

    public StoreException(Kind kind, String message, Throwable cause) {
        this(kind, message, cause, null);
    }

    private StoreException(Kind kind, String message, Throwable cause, String region) {
        super(message, cause);
        this.kind = kind;
        this.region = region;
    }

    /** The bucket is in {@code region}, not the one its requests were signed for. */
    static StoreException wrongRegion(String region, String message) {
        return new StoreException(Kind.WRONG_REGION, message, null, region);
    }

    /** The bucket's region an answer named (WRONG_REGION); null otherwise. */
    public String region() {
        return region;
    }

    public Kind kind() {
        return kind;
    }

    /**
     * The one place object-store failures become errnos. A changed object is EIO rather than ESTALE:
     * loaders treat EIO as a failed sample, and ESTALE would suggest NFS semantics os2g does not have.
     */
    @Override
    public int errno() {
        return switch (kind) {
            case NOT_FOUND, NO_SUCH_BUCKET -> Errno.ENOENT;
            case ACCESS_DENIED, BAD_CREDENTIALS, EXPIRED_CREDENTIALS -> Errno.EACCES;
            case CHANGED, UNREACHABLE, UNTRUSTED, UNAVAILABLE, PROTOCOL, WRONG_REGION -> Errno.EIO;
        };
    }

    /** Retrying can help only with transient failures. */
    boolean retryable() {
        return kind == Kind.UNAVAILABLE || kind == Kind.UNREACHABLE;
    }
}
