package io.os2g.store;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import okhttp3.Response;

/**
 * An S3 error answer as os2g reads it: the HTTP status, the error code of its XML body (none for an HTML
 * page from a load balancer), and the bucket's region where the answer names one (the {@code
 * x-amz-bucket-region} header, or the body's {@code <Region>}). {@link #failure} is the one place an answer
 * becomes a {@link StoreException}.
 */
record ErrorAnswer(int status, String code, String region) {

    /** Bytes of an error body read at most. */
    static final int MAX_BODY = 16 * 1024;
    static final String REGION_HEADER = "x-amz-bucket-region";
    private static final Pattern CODE = Pattern.compile("<Code>([^<]{1,128})</Code>");
    private static final Pattern REGION = Pattern.compile("<Region>([a-z0-9-]{1,64})</Region>");

    /** The answer of an OkHttp call (its body peeked, not consumed). */
    static ErrorAnswer of(Response response) {
        byte[] head;
        try {
            // as much as there is, up to the bound (a gzipped body has no length until read)
            okio.BufferedSource peek = response.body().source().peek();
            peek.request(MAX_BODY);
            head = peek.readByteArray(Math.min(MAX_BODY, peek.getBuffer().size()));
        } catch (IOException | RuntimeException e) {
            head = new byte[0];
        }
        return of(response.code(), head, response.header(REGION_HEADER));
    }

    /** The answer of {@code status} with the first bytes of its body and its region header (null when absent). */
    static ErrorAnswer of(int status, byte[] head, String regionHeader) {
        String body = new String(head, StandardCharsets.UTF_8);
        Matcher code = CODE.matcher(body);
        Matcher region = REGION.matcher(body);
        String named = regionHeader != null && !regionHeader.isBlank() ? regionHeader.strip() : region.find() ? region.group(1) : null;
        return new ErrorAnswer(status, code.find() ? code.group(1) : "", named);
    }

    /**
     * What the answer means. A redirect (301, 307) or a signature for the wrong region that names the
     * bucket's region is {@code WRONG_REGION}: the store re-targets itself, never following a redirect
     * with a Host header for the old host; one that names no region is a protocol error.
     */
    StoreException failure(String what) {
        StoreException.Kind kind = switch (code) {
            case "NoSuchKey", "NoSuchUpload" -> StoreException.Kind.NOT_FOUND;
            case "NoSuchBucket" -> StoreException.Kind.NO_SUCH_BUCKET;
            case "AccessDenied", "AllAccessDisabled" -> StoreException.Kind.ACCESS_DENIED;
            case "AuthorizationHeaderMalformed" -> region != null ? StoreException.Kind.WRONG_REGION : StoreException.Kind.BAD_CREDENTIALS;
            case "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidSecurity" -> StoreException.Kind.BAD_CREDENTIALS;
            case "ExpiredToken", "InvalidToken", "TokenRefreshRequired" -> StoreException.Kind.EXPIRED_CREDENTIALS;
            case "PreconditionFailed" -> StoreException.Kind.CHANGED;
            // 501: a request this store does not take; asking again will not change that
            case "NotImplemented" -> StoreException.Kind.PROTOCOL;
            case "SlowDown", "InternalError", "ServiceUnavailable", "RequestTimeout", "Throttling" ->
                    StoreException.Kind.UNAVAILABLE;
            case "PermanentRedirect", "TemporaryRedirect", "IllegalLocationConstraintException" ->
                    region != null ? StoreException.Kind.WRONG_REGION : StoreException.Kind.PROTOCOL;
            default -> status == 412 ? StoreException.Kind.CHANGED
                    : status == 404 ? StoreException.Kind.NOT_FOUND
                    : (status == 301 || status == 307) && region != null ? StoreException.Kind.WRONG_REGION
                    : status == 403 ? StoreException.Kind.ACCESS_DENIED
                    : status >= 500 || status == 429 ? StoreException.Kind.UNAVAILABLE
                    : StoreException.Kind.PROTOCOL;
        };
        String message = (code.isEmpty() ? "" : code + " ") + "(HTTP " + status + (region == null ? "" : ", bucket in " + region) + "): " + what;
        return kind == StoreException.Kind.WRONG_REGION ? StoreException.wrongRegion(region, message)
                : new StoreException(kind, message, null);
    }
}
