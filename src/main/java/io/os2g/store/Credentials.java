package io.os2g.store;

/**
 * S3 credentials. {@link #toString()} never shows the secret or the token, so a credential can be
 * logged or printed by mistake without leaking.
 */
public record Credentials(String accessKeyId, String secretAccessKey, String sessionToken) {

    private static final Credentials ANONYMOUS = new Credentials(null, null, null);

    /** No credentials: requests are sent unsigned (public buckets, {@code --no-sign-request}). */
    public static Credentials anonymous() {
        return ANONYMOUS;
    }

    public boolean isAnonymous() {
        return accessKeyId == null;
    }

    @Override
    public String toString() {
        return isAnonymous() ? "Credentials[anonymous]" : "Credentials[accessKeyId=" + accessKeyId + ", secret=***]";
    }
}
