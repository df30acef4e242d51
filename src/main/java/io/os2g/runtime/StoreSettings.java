package io.os2g.runtime;

import io.os2g.store.AwsCredentialSources;
import io.os2g.store.CredentialsSource;
import io.os2g.store.RetryPolicy;
import io.os2g.store.StoreConfig;
import io.os2g.store.Tls;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How to reach the object store, as the user gave it (the options of whichever process holds the
 * store client: {@code mount}, {@code agent}, {@code index}), and the rules for it: bounds that keep
 * "nothing hangs", the environment's defaults ({@code AWS_ENDPOINT_URL}, {@code AWS_REGION},
 * {@code AWS_CA_BUNDLE}), the credential sources.
 *
 * @param endpoint null for {@code $AWS_ENDPOINT_URL} or AWS
 * @param region null for {@code $AWS_REGION} or us-east-1
 * @param profile null for the default chain
 * @param credentialsFile null for the default chain
 * @param caBundle null for {@code $AWS_CA_BUNDLE} or the JDK's CAs
 * @param requestTimeout seconds for one request, body included
 */
public record StoreSettings(String endpoint, String region, String profile, Path credentialsFile, boolean noSignRequest,
                            Path caBundle, boolean insecureSkipVerify, boolean virtualHostStyle, int maxFetches,
                            int requestTimeout, int retries) {

    private static final Logger LOG = LoggerFactory.getLogger(StoreSettings.class);
    /** 30 retries back off for about two minutes: an outage longer than that is EIO, not a hung reader. */
    static final int MAX_RETRIES = 30;
    static final int MAX_REQUEST_TIMEOUT = 600;
    static final int MAX_FETCHES = 1024;

    /** The retry policy these options give; refuses bounds that would let a read wait without end. */
    public RetryPolicy retry() {
        // upper bounds keep "nothing hangs": a read's deadline sums every attempt and backoff
        if (requestTimeout < 1 || requestTimeout > MAX_REQUEST_TIMEOUT) {
            throw new UsageError("--request-timeout must be from 1 to " + MAX_REQUEST_TIMEOUT + " seconds: " + requestTimeout);
        }
        if (retries < 0 || retries > MAX_RETRIES) {
            throw new UsageError("--retries must be from 0 to " + MAX_RETRIES + ": " + retries);
        }
        if (maxFetches < 1 || maxFetches > MAX_FETCHES) {
            throw new UsageError("--max-fetches must be from 1 to " + MAX_FETCHES + ": " + maxFetches);
        }
        return new RetryPolicy(retries + 1, RetryPolicy.DEFAULT.baseDelay(), RetryPolicy.DEFAULT.maxDelay(),
                Duration.ofSeconds(requestTimeout));
    }

    /** How long a read may wait for a fetch: every attempt and backoff, and one more request's time. */
    public Duration readDeadline() {
        return retry().deadline().plus(Duration.ofSeconds(requestTimeout));
    }

    /** The store of {@code bucket}; the store fetches (and renews) its credentials from the sources these options name. */
    public StoreConfig config(String bucket) {
        String endpointText = endpoint != null ? endpoint
                : System.getenv().getOrDefault("AWS_ENDPOINT_URL", "https://s3.amazonaws.com");
        String envRegion = System.getenv("AWS_REGION");
        boolean regionGiven = region != null || (envRegion != null && !envRegion.isBlank());
        String regionText = region != null ? region : regionGiven ? envRegion : "us-east-1";
        if (credentialsFile != null && !Files.isReadable(credentialsFile)) {
            throw new UsageError("--credentials-file is not a readable file: " + credentialsFile);
        }
        CredentialsSource credentials = AwsCredentialSources.of(System.getenv(), noSignRequest, profile, credentialsFile);
        RetryPolicy retry = retry();
        URI endpointUri = Preflight.endpoint(endpointText);
        // AWS's endpoints take the bucket as a host name, as the SDKs send it (not a dotted bucket over https:
        // its name would not match the certificate); other endpoints rarely have the DNS for it
        boolean virtualHost = virtualHostStyle || (endpointUri.getHost().endsWith(".amazonaws.com") && !bucket.contains("."));
        return new StoreConfig(endpointUri, regionText, regionGiven, bucket, credentials, virtualHost, retry,
                Math.max(16, maxFetches * 2), tls(endpointUri));
    }

    private Tls tls(URI endpoint) {
        if (!endpoint.getScheme().equals("https")) {
            return Tls.SYSTEM;
        }
        if (insecureSkipVerify) {
            LOG.warn("--insecure-skip-verify: the certificate of {} is NOT checked; anyone on the path can read and alter "
                    + "the data and see the signed requests. Use it for test setups only; give --ca-bundle for a private CA", endpoint);
            return new Tls(null, true);
        }
        Path bundle = caBundle;
        String fromEnv = System.getenv("AWS_CA_BUNDLE");
        if (bundle == null && fromEnv != null && !fromEnv.isBlank()) {
            bundle = Path.of(fromEnv);
        }
        if (bundle != null && !Files.isReadable(bundle)) {
            throw new UsageError((caBundle != null ? "--ca-bundle" : "AWS_CA_BUNDLE") + " is not a readable file: " + bundle);
        }
        return new Tls(bundle, false);
    }
}
