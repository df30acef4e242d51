package io.os2g.store;

import java.io.IOException;
import java.util.Map;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import okio.BufferedSink;

/**
 * One PUT of an object or of a part of a multipart upload, its body streamed from the caller and signed
 * as an unsigned payload: the write path's counterpart of {@link RangedGet}. Over plain HTTP it goes on
 * the GETs' own connections ({@link SocketHttp#put}), the body sent to the socket by the caller (from the
 * staging pages with sendfile: no copy through the JVM); otherwise through OkHttp.
 *
 * <p>Why not the MinIO client: for an {@code http://} endpoint it signs every body's SHA-256 and sends
 * its MD5, which a mount's JIT (C1 only, no SHA intrinsics) computes at about 150 MB/s: 12 CPU seconds
 * per GiB uploaded, against well under one to send the bytes. It also wants the body whole in an array,
 * where this streams it from the staging pages. A store that refuses an unsigned payload gets the
 * client's way instead ({@link MinioObjectStore}).
 */
final class StreamedPut {

    private final OkHttpClient http;
    private final BucketEndpoint endpoint;
    /** The plain-HTTP connections of the GETs, for a body sent straight to the socket; null: OkHttp (https, proxies). */
    private final java.util.function.Supplier<SocketHttp> sockets;

    /** The request's own body, unused: {@link SocketHttp#put} sends the caller's. */
    private static final RequestBody NO_BODY = RequestBody.create(new byte[0], null);

    StreamedPut(OkHttpClient http, BucketEndpoint endpoint, java.util.function.Supplier<SocketHttp> sockets) {
        this.http = http;
        this.endpoint = endpoint;
        this.sockets = sockets;
    }

    /**
     * PUTs {@code body} to {@code key} with {@code query} (empty for a whole object; partNumber and
     * uploadId for a part) and {@code headers} (a condition); returns the ETag the store answered,
     * without quotes.
     */
    String put(String key, Map<String, String> query, Map<String, String> headers, ObjectUploads.Body body) throws IOException {
        String what = "bucket=" + endpoint.bucket() + ", key=" + key + " " + query.keySet();
        SocketHttp socket = sockets.get();
        Request.Builder builder = new Request.Builder().url(endpoint.object(key, query));
        headers.forEach(builder::header);
        if (socket != null) {
            return socket.put(endpoint.sign(builder.put(NO_BODY), SigV4.UNSIGNED_PAYLOAD), body, what);
        }
        Request request = endpoint.sign(builder.put(requestBody(body)), SigV4.UNSIGNED_PAYLOAD);
        try (Response response = http.newCall(request).execute()) {
            if (response.code() != 200) {
                throw ErrorAnswer.of(response).failure(what);
            }
            String etag = response.header("ETag");
            if (etag == null) {
                throw new StoreException(StoreException.Kind.PROTOCOL, "PUT answered without an ETag: key=" + key, null);
            }
            return ObjectSummary.unquote(etag);
        }
    }

    private static RequestBody requestBody(ObjectUploads.Body body) {
        return new RequestBody() {
            @Override
            public MediaType contentType() {
                return null;
            }

            @Override
            public long contentLength() {
                return body.length();
            }

            @Override
            public void writeTo(BufferedSink sink) throws IOException {
                body.writeTo(sink.outputStream());
            }
        };
    }
}
