package io.os2g.store;

import java.time.Instant;

/**
 * S3 credentials, and when they expire (null: never). {@link #toString()} never shows the secret or the
 * token, so a credential can be logged or printed by mistake without leaking. Credentials given as
 * they are (a file, the environment) are their own {@link CredentialsSource}.
 */
public record Credentials(String accessKeyId, String secretAccessKey, String sessionToken, Instant expiration)
        implements CredentialsSource {

    private static final Credentials ANONYMOUS = new Credentials(null, null, null, null);

    /** Credentials that do not expire. */
    public Credentials(String accessKeyId, String secretAccessKey, String sessionToken) {
        this(accessKeyId, secretAccessKey, sessionToken, null);
    }

    /** No credentials: requests are sent unsigned (public buckets, {@code --no-sign-request}). */
    public static Credentials anonymous() {
        return ANONYMOUS;
    }

    public boolean isAnonymous() {
        return accessKeyId == null;
    }

    /** Whether these are temporary credentials (a session token or an expiry), which a source can renew. */
    public boolean isTemporary() {
        return expiration != null || (sessionToken != null && !sessionToken.isEmpty());
    }

    @Override
    public Credentials fetch() {
        return this;
    }

    @Override
    public String name() {
        return isAnonymous() ? "none (unsigned requests)" : "static credentials";
    }

    @Override
    public String toString() {
        return isAnonymous() ? "Credentials[anonymous]" : "Credentials[accessKeyId=" + accessKeyId + ", secret=***"
                + (sessionToken == null ? "" : ", token=***") + (expiration == null ? "" : ", expiration=" + expiration) + "]";
    }
}
