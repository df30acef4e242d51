package io.os2g.store;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.time.Clock;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Supplier;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import okhttp3.Request;

/**
 * Signs the agent's GETs (objects, listings) with AWS Signature Version 4 (the Authorization header
 * form, service {@code s3}, an empty payload).
 *
 * <p>Why not MinIO's {@code Signer}, which it replaces on this path: per request that one derives the
 * signing key (four HMACs, each a provider lookup), builds the canonical request through regular
 * expressions and multimaps, and parses back the date it was given, a visible share of the agent's
 * CPU per small file. Here the signing key is derived once per UTC day, HMAC and SHA-256 instances are
 * cloned from initialised prototypes, and the canonical request is one {@link StringBuilder}. The result
 * is the same signature; {@code SigV4Test} checks it against AWS's published example and against MinIO's
 * signer.
 */
final class SigV4 {

    private static final String ALGORITHM = "AWS4-HMAC-SHA256";
    private static final String SERVICE = "s3";
    /** SHA-256 of an empty body, the payload hash of every GET (plain http needs the real hash). */
    static final String UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD";
    static final String EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    /** Headers a proxy may change on the way, left out of the signature as the AWS SDKs and MinIO leave them. */
    private static final Set<String> UNSIGNED = Set.of("accept-encoding", "authorization", "content-type",
            "content-length", "user-agent");
    /** Headers {@link #sign} sets itself, replacing any the request carried. */
    private static final Set<String> ADDED = Set.of("x-amz-date", "x-amz-content-sha256", "x-amz-security-token");
    private static final HexFormat HEX = HexFormat.of();

    /** The signing key of one UTC day and one set of credentials, as a MAC ready to be cloned. */
    private record DayKey(String date, Credentials credentials, Mac mac) {
    }

    private final Supplier<Credentials> credentials;
    private final String region;
    private final Clock clock;
    private final MessageDigest sha256;
    private volatile DayKey dayKey;

    SigV4(Credentials credentials, String region, Clock clock) {
        this(() -> credentials, region, clock);
        if (credentials.isAnonymous()) {
            throw new IllegalArgumentException("anonymous credentials sign nothing");
        }
    }

    /** Signs with whatever {@code credentials} holds at each request (renewed credentials re-derive the key). */
    SigV4(Supplier<Credentials> credentials, String region, Clock clock) {
        this.credentials = credentials;
        this.region = region;
        this.clock = clock;
        try {
            this.sha256 = MessageDigest.getInstance("SHA-256");
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("SHA-256 missing from this JDK", e);
        }
    }

    /**
     * {@code request} (a GET) with {@code x-amz-date}, {@code x-amz-content-sha256}, the session token if
     * any, and {@code Authorization} added. Every other header it carries is signed. A query must be
     * encoded by S3's rules already ({@link BucketEndpoint#bucket}): it is signed as it is sent.
     */
    Request sign(Request request) {
        return sign(request, EMPTY_SHA256);
    }

    /**
     * {@code request} signed for a body whose SHA-256 is {@code payloadHash}, or {@link #UNSIGNED_PAYLOAD}
     * for a body streamed unsigned (an upload's part: hashing it would cost more CPU than sending it).
     */
    Request sign(Request request, String payloadHash) {
        Credentials credentials = this.credentials.get();
        String amzDate = amzDate(LocalDateTime.ofInstant(clock.instant(), ZoneOffset.UTC));
        String date = amzDate.substring(0, 8);
        String token = credentials.sessionToken() == null || credentials.sessionToken().isEmpty() ? null
                : credentials.sessionToken();
        TreeMap<String, String> headers = new TreeMap<>();
        for (int i = 0; i < request.headers().size(); i++) {
            String name = request.headers().name(i).toLowerCase(Locale.ROOT);
            if (!UNSIGNED.contains(name) && !ADDED.contains(name)) {
                headers.merge(name, canonicalValue(request.headers().value(i)), (a, b) -> a + "," + b);
            }
        }
        headers.put("x-amz-date", amzDate);
        headers.put("x-amz-content-sha256", payloadHash);
        if (token != null) {
            headers.put("x-amz-security-token", canonicalValue(token));
        }
        StringBuilder canonical = new StringBuilder(256).append(request.method()).append('\n')
                .append(request.url().encodedPath()).append('\n').append(canonicalQuery(request.url().encodedQuery())).append('\n');
        for (Map.Entry<String, String> h : headers.entrySet()) {
            canonical.append(h.getKey()).append(':').append(h.getValue()).append('\n');
        }
        String signedHeaders = String.join(";", headers.keySet());
        canonical.append('\n').append(signedHeaders).append('\n').append(payloadHash);

        String scope = date + "/" + region + "/" + SERVICE + "/aws4_request";
        String stringToSign = ALGORITHM + "\n" + amzDate + "\n" + scope + "\n" + HEX.formatHex(digest(canonical));
        Mac mac = clone(signingKey(date, credentials));
        String signature = HEX.formatHex(mac.doFinal(stringToSign.getBytes(StandardCharsets.UTF_8)));
        Request.Builder signed = request.newBuilder()
                .header("x-amz-date", amzDate)
                .header("x-amz-content-sha256", payloadHash)
                .header("Authorization", ALGORITHM + " Credential=" + credentials.accessKeyId() + "/" + scope
                        + ", SignedHeaders=" + signedHeaders + ", Signature=" + signature);
        if (token != null) {
            signed.header("X-Amz-Security-Token", token);
        }
        return signed.build();
    }

    private byte[] digest(CharSequence text) {
        try {
            MessageDigest md = (MessageDigest) sha256.clone();
            return md.digest(text.toString().getBytes(StandardCharsets.UTF_8));
        } catch (CloneNotSupportedException e) {
            throw new IllegalStateException("SHA-256 of this JDK cannot be cloned", e);
        }
    }

    private static Mac clone(Mac prototype) {
        try {
            return (Mac) prototype.clone();
        } catch (CloneNotSupportedException e) {
            throw new IllegalStateException("HmacSHA256 of this JDK cannot be cloned", e);
        }
    }

    /**
     * The signing key of the day and of {@code credentials}: HMAC chain over date, region, service and
     * "aws4_request", once per day and again whenever the credentials are renewed.
     */
    private Mac signingKey(String date, Credentials credentials) {
        DayKey key = dayKey;
        if (key != null && key.date().equals(date) && key.credentials() == credentials) {
            return key.mac();
        }
        byte[] k = hmac(("AWS4" + credentials.secretAccessKey()).getBytes(StandardCharsets.UTF_8), date);
        k = hmac(k, region);
        k = hmac(k, SERVICE);
        k = hmac(k, "aws4_request");
        DayKey fresh = new DayKey(date, credentials, mac(k));
        dayKey = fresh; // racing threads derive the same key: last one wins, harmlessly
        return fresh.mac();
    }

    private static byte[] hmac(byte[] key, String data) {
        return mac(key).doFinal(data.getBytes(StandardCharsets.UTF_8));
    }

    private static Mac mac(byte[] key) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            return mac;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 missing from this JDK", e);
        }
    }

    /** The query's name=value pairs sorted by name (a name without a value gets "="). */
    private static String canonicalQuery(String encodedQuery) {
        if (encodedQuery == null || encodedQuery.isEmpty()) {
            return "";
        }
        TreeMap<String, String> sorted = new TreeMap<>();
        for (String pair : encodedQuery.split("&")) {
            int eq = pair.indexOf('=');
            String name = eq < 0 ? pair : pair.substring(0, eq);
            if (sorted.put(name, eq < 0 ? "" : pair.substring(eq + 1)) != null) {
                throw new IllegalArgumentException("a query name twice is not signed here: " + encodedQuery);
            }
        }
        StringBuilder query = new StringBuilder(encodedQuery.length() + 1);
        for (Map.Entry<String, String> p : sorted.entrySet()) {
            query.append(query.isEmpty() ? "" : "&").append(p.getKey()).append('=').append(p.getValue());
        }
        return query.toString();
    }

    /** Trimmed, with runs of spaces made one, as the canonical form asks. */
    private static String canonicalValue(String value) {
        String trimmed = value.strip();
        return trimmed.contains("  ") ? trimmed.replaceAll(" {2,}", " ") : trimmed;
    }

    /** {@code yyyyMMdd'T'HHmmss'Z'} without a formatter: it is on every request. */
    static String amzDate(LocalDateTime t) {
        StringBuilder s = new StringBuilder(16);
        pad(s, t.getYear(), 4);
        pad(s, t.getMonthValue(), 2);
        pad(s, t.getDayOfMonth(), 2);
        s.append('T');
        pad(s, t.getHour(), 2);
        pad(s, t.getMinute(), 2);
        pad(s, t.getSecond(), 2);
        return s.append('Z').toString();
    }

    private static void pad(StringBuilder s, int value, int width) {
        String digits = Integer.toString(value);
        for (int i = digits.length(); i < width; i++) {
            s.append('0');
        }
        s.append(digits);
    }
}
