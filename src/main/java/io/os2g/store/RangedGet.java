package io.os2g.store;

import java.io.IOException;
import java.io.InputStream;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;

/**
 * One ranged GET as a single synchronous OkHttp call, signed by {@link SigV4}: the GET path for
 * {@code https://} endpoints and for answers {@link SocketHttp} does not speak.
 *
 * <p>Why not {@code MinioClient.getObject}: it dispatches every call on OkHttp's dispatcher threads,
 * hands the response back through a future and builds its arguments through several layers, which
 * costs more CPU per small file than the GET itself (docs/PERFORMANCE.md); the agent's CPU per small
 * file is what bounds a shuffled epoch. The URL is the MinIO client's ({@link BucketEndpoint}).
 */
final class RangedGet {

    private static final Pattern CONTENT_RANGE = Pattern.compile("bytes (\\d+)-(\\d+)/(\\d+|\\*)");

    private final OkHttpClient http;
    private final BucketEndpoint endpoint;

    RangedGet(OkHttpClient http, BucketEndpoint endpoint) {
        this.http = http;
        this.endpoint = endpoint;
    }

    /**
     * Sends the GET for {@code [offset, offset + length)} (If-Match {@code etag} unless empty) and hands its
     * body to {@code reader}. Throws {@link StoreException} for an answer that is not the range asked for,
     * and {@link IOException} for a transport failure.
     */
    void get(String key, long offset, long length, String etag, ObjectStore.BodyReader reader)
            throws IOException {
        String what = what(endpoint, key, offset, length);
        try (Response response = http.newCall(request(endpoint, key, offset, length, etag)).execute()) {
            int status = response.code();
            if (status == 200 || status == 206) {
                checkRange(status, response.header("Content-Range"), what, offset, length);
                checkETag(response.header("ETag"), etag, what);
                try (InputStream body = response.body().byteStream()) {
                    reader.read(body);
                }
                return;
            }
            throw ErrorAnswer.of(response).failure(what);
        }
    }

    /** The signed ranged GET of {@code [offset, offset + length)} of {@code key}, If-Match {@code etag} unless empty. */
    static Request request(BucketEndpoint endpoint, String key, long offset, long length, String etag) {
        Request.Builder request = new Request.Builder()
                .url(endpoint.object(key))
                .get()
                // without it OkHttp asks for gzip and inflates transparently: a range of the object, not of the body
                .header("Accept-Encoding", "identity")
                .header("Range", "bytes=" + offset + "-" + (offset + length - 1));
        if (!etag.isEmpty()) {
            request.header("If-Match", "\"" + etag + "\"");
        }
        return endpoint.sign(request);
    }

    /** The GET as its failures name it. */
    static String what(BucketEndpoint endpoint, String key, long offset, long length) {
        return "bucket=" + endpoint.bucket() + ", key=" + key + " [" + offset + ", +" + length + ")";
    }

    /**
     * An answer of another version than the one pinned ({@code pinned}, empty: none) would mix two
     * versions' bytes in one file: refuse it, for a server that ignores If-Match. An answer without an
     * ETag cannot show it is the pinned version.
     */
    static void checkETag(String answered, String pinned, String what) {
        if (pinned.isEmpty()) {
            return;
        }
        if (answered == null) {
            throw new StoreException(StoreException.Kind.PROTOCOL, "an answer without an ETag for version " + pinned + ": " + what, null);
        }
        if (!ObjectSummary.unquote(answered).equals(pinned)) {
            throw new StoreException(StoreException.Kind.CHANGED, "the answer is of version " + ObjectSummary.unquote(answered)
                    + ", not " + pinned + " (the server ignored If-Match): " + what, null);
        }
    }

    /**
     * A body that does not start at {@code offset} would be wrong bytes: refuse it. A 206 must say which
     * range it holds (RFC 9110 requires Content-Range on a single-range 206), and it must be the range
     * asked for.
     */
    static void checkRange(int status, String contentRange, String what, long offset, long length) {
        if (status == 200) {
            // a server that ignores Range sends the whole object: right only when the range starts at 0
            if (offset == 0) {
                return;
            }
            throw new StoreException(StoreException.Kind.PROTOCOL,
                    "server ignored the Range header (HTTP 200 for bytes " + offset + "-): " + what, null);
        }
        if (contentRange == null) {
            throw new StoreException(StoreException.Kind.PROTOCOL, "HTTP " + status + " without Content-Range for bytes "
                    + offset + "-" + (offset + length - 1) + ": " + what, null);
        }
        Matcher m = CONTENT_RANGE.matcher(contentRange);
        if (!m.matches() || Long.parseLong(m.group(1)) != offset || Long.parseLong(m.group(2)) < offset + length - 1) {
            throw new StoreException(StoreException.Kind.PROTOCOL, "Content-Range " + contentRange
                    + " is not the range asked for (" + offset + "-" + (offset + length - 1) + "): " + what, null);
        }
    }
}
