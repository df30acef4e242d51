package io.os2g.store;

import io.minio.GetPresignedObjectUrlArgs;
import io.minio.MinioClient;
import io.minio.S3Escaper;
import io.minio.http.Method;
import java.time.Clock;
import java.util.Map;
import okhttp3.HttpUrl;
import okhttp3.Request;

/**
 * Where one bucket's requests go and how they are signed: the bucket's base URL as the MinIO client
 * addresses it (taken once from a presigned URL, so path or virtual-host style and AWS's regional host
 * names are exactly what the client would use), its Host header, and the {@link SigV4} signer.
 */
final class BucketEndpoint {

    private final String bucket;
    /** The bucket's root with a trailing slash. */
    private final HttpUrl bucketUrl;
    private final String hostHeader;
    /** null for anonymous credentials: requests go unsigned. */
    private final SigV4 signer;

    BucketEndpoint(MinioClient client, StoreConfig config, String region, RefreshingCredentials credentials) {
        this.bucket = config.bucket();
        this.bucketUrl = bucketUrl(client, config.bucket());
        // an IPv6 literal goes in brackets, as in the URL ("[::1]:9000")
        String host = bucketUrl.host().contains(":") ? "[" + bucketUrl.host() + "]" : bucketUrl.host();
        this.hostHeader = bucketUrl.port() == HttpUrl.defaultPort(bucketUrl.scheme()) ? host : host + ":" + bucketUrl.port();
        this.signer = credentials.current().isAnonymous() ? null
                : new SigV4(credentials::current, region, Clock.systemUTC());
    }

    private static HttpUrl bucketUrl(MinioClient client, String bucket) {
        String probeKey = "k";
        try {
            String presigned = client.getPresignedObjectUrl(GetPresignedObjectUrlArgs.builder()
                    .method(Method.GET).bucket(bucket).object(probeKey).expiry(60).build());
            HttpUrl url = HttpUrl.get(presigned);
            String path = url.encodedPath();
            return url.newBuilder().query(null)
                    .encodedPath(path.substring(0, path.length() - probeKey.length()))
                    .build();
        } catch (Exception e) {
            throw new StoreException(StoreException.Kind.PROTOCOL,
                    "cannot build the URL of bucket " + bucket + ": " + e.getMessage(), e);
        }
    }

    String bucket() {
        return bucket;
    }

    /** The URL of {@code key}, encoded as the MinIO client encodes keys (and signs them). */
    HttpUrl object(String key) {
        return bucketUrl.newBuilder().addEncodedPathSegments(S3Escaper.encodePath(key)).build();
    }

    /** The URL of {@code key} with {@code query}, names and values encoded by S3's rules (and signed so). */
    HttpUrl object(String key, Map<String, String> query) {
        HttpUrl.Builder url = object(key).newBuilder();
        query.forEach((name, value) -> url.addEncodedQueryParameter(S3Escaper.encode(name), S3Escaper.encode(value)));
        return url.build();
    }

    /**
     * The bucket's own URL (no trailing slash in path style: {@code /bucket}, as S3 documents it) with
     * {@code query}, names and values encoded by S3's rules, which are also the signature's.
     */
    HttpUrl bucket(Map<String, String> query) {
        String path = bucketUrl.encodedPath();
        HttpUrl.Builder url = bucketUrl.newBuilder().encodedPath(path.length() > 1 ? path.substring(0, path.length() - 1) : path);
        query.forEach((name, value) -> url.addEncodedQueryParameter(S3Escaper.encode(name), S3Escaper.encode(value)));
        return url.build();
    }

    /** {@code request} with the Host header, signed (unless the credentials are anonymous). */
    Request sign(Request.Builder request) {
        return sign(request, SigV4.EMPTY_SHA256);
    }

    /** {@code request} with the Host header, signed for a body of SHA-256 {@code payloadHash} (or unsigned payload). */
    Request sign(Request.Builder request, String payloadHash) {
        Request built = request.header("Host", hostHeader).build();
        return signer == null ? built : signer.sign(built, payloadHash);
    }
}
