package io.os2g.support;

import io.minio.MakeBucketArgs;
import io.minio.MinioClient;
import io.minio.PutObjectArgs;
import io.minio.RemoveObjectArgs;
import io.os2g.store.Credentials;
import io.os2g.store.MinioObjectStore;
import io.os2g.store.RetryPolicy;
import io.os2g.store.Tls;
import io.os2g.store.StoreConfig;
import java.io.ByteArrayInputStream;
import java.net.URI;
import java.time.Duration;
import org.gaul.s3proxy.junit.S3ProxyExtension;

/** Buckets and objects on the S3Proxy of a test, through the S3 API. */
public final class S3Fixture {

    public static final String ACCESS_KEY = "test-access";
    public static final String SECRET_KEY = "test-secret";

    private final S3ProxyExtension proxy;
    private MinioClient client;

    public S3Fixture(S3ProxyExtension proxy) {
        this.proxy = proxy;
    }

    public static S3ProxyExtension newProxy() {
        return S3ProxyExtension.builder().withCredentials(ACCESS_KEY, SECRET_KEY).ignoreUnknownHeaders().build();
    }

    public URI endpoint() {
        return proxy.getUri();
    }

    /** One client per fixture: building one parses the CA bundle of SSL_CERT_FILE, which is slow. */
    public synchronized MinioClient client() {
        if (client == null) {
            client = MinioClient.builder().endpoint(endpoint().toString()).credentials(ACCESS_KEY, SECRET_KEY).build();
        }
        return client;
    }

    public S3Fixture bucket(String name) throws Exception {
        client().makeBucket(MakeBucketArgs.builder().bucket(name).build());
        return this;
    }

    public S3Fixture put(String bucket, String key, byte[] body) throws Exception {
        client().putObject(PutObjectArgs.builder().bucket(bucket).object(key)
                .stream(new ByteArrayInputStream(body), body.length, -1).build());
        return this;
    }

    /** Puts {@code body} with user metadata ({@code x-amz-meta-NAME}). */
    public S3Fixture put(String bucket, String key, byte[] body, java.util.Map<String, String> metadata) throws Exception {
        client().putObject(PutObjectArgs.builder().bucket(bucket).object(key).userMetadata(metadata)
                .stream(new ByteArrayInputStream(body), body.length, -1).build());
        return this;
    }

    /** The object's bytes as the server holds them. */
    public byte[] get(String bucket, String key) throws Exception {
        try (var in = client().getObject(io.minio.GetObjectArgs.builder().bucket(bucket).object(key).build())) {
            return in.readAllBytes();
        }
    }

    public S3Fixture delete(String bucket, String key) throws Exception {
        client().removeObject(RemoveObjectArgs.builder().bucket(bucket).object(key).build());
        return this;
    }

    /** An AWS-style credentials file in {@code dir} with this server's keys, for {@code --credentials-file}. */
    public static java.nio.file.Path credentialsFile(java.nio.file.Path dir) throws java.io.IOException {
        java.nio.file.Path file = dir.resolve("credentials");
        java.nio.file.Files.writeString(file, "[default]\naws_access_key_id = " + ACCESS_KEY
                + "\naws_secret_access_key = " + SECRET_KEY + "\n");
        return file;
    }

    public StoreConfig config(String bucket) {
        return config(bucket, new Credentials(ACCESS_KEY, SECRET_KEY, null));
    }

    public StoreConfig config(String bucket, Credentials credentials) {
        return new StoreConfig(endpoint(), "us-east-1", true, bucket, credentials, false,
                new RetryPolicy(3, Duration.ofMillis(10), Duration.ofMillis(100), Duration.ofSeconds(5)), 16, Tls.SYSTEM);
    }

    public MinioObjectStore store(String bucket) {
        return new MinioObjectStore(config(bucket));
    }

    /** Deterministic bytes for a test object. */
    public static byte[] bytes(int length, int seed) {
        byte[] b = new byte[length];
        java.util.SplittableRandom random = new java.util.SplittableRandom(seed);
        random.nextBytes(b);
        return b;
    }
}
