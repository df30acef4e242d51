package io.os2g.store;

import java.net.URI;
import java.util.Objects;

/**
 * Where and how to reach the bucket.
 *
 * @param endpoint S3 endpoint, e.g. {@code http://minio:9000} or {@code https://s3.amazonaws.com}
 * @param region signing region (default us-east-1)
 * @param regionGiven whether {@code region} was given ({@code --region}, {@code AWS_REGION}): when not, the
 *     store signs for the bucket's own region once an answer names it
 * @param bucket bucket name
 * @param credentials where credentials come from ({@link AwsCredentialSources}), fixed ones, or
 *     {@link Credentials#anonymous()}
 * @param virtualHostStyle address the bucket as a host name instead of the path (path style is the
 *     default, because custom endpoints rarely have the DNS for virtual hosts)
 * @param retry retries and deadlines of every call
 * @param maxConnections HTTP connections kept open to the endpoint
 * @param tls certificate checks of an https endpoint
 */
public record StoreConfig(URI endpoint, String region, boolean regionGiven, String bucket, CredentialsSource credentials,
                          boolean virtualHostStyle, RetryPolicy retry, int maxConnections, Tls tls) {
    public StoreConfig {
        Objects.requireNonNull(endpoint, "endpoint");
        Objects.requireNonNull(region, "region");
        Objects.requireNonNull(bucket, "bucket");
        Objects.requireNonNull(credentials, "credentials");
        Objects.requireNonNull(retry, "retry");
        Objects.requireNonNull(tls, "tls");
    }
}
