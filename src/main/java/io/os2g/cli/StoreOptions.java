package io.os2g.cli;

import io.os2g.runtime.StoreSettings;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** How to reach the object store: the options of whichever process holds the S3 client ({@code mount}, {@code agent}). */
final class StoreOptions {

    @Option(names = "--endpoint", paramLabel = "URL", description = "S3 endpoint (default: $AWS_ENDPOINT_URL or https://s3.amazonaws.com).")
    String endpoint;

    @Option(names = "--region", paramLabel = "REGION", description = "Signing region (default: $AWS_REGION or us-east-1).")
    String region;

    @Option(names = "--profile", paramLabel = "NAME",
            description = "Use this profile of ~/.aws/credentials and ~/.aws/config alone (keys, credential_process, SSO, role_arn), or of --credentials-file.")
    String profile;

    @Option(names = "--credentials-file", paramLabel = "FILE", description = "Use this AWS-style credentials file alone (its default profile, or --profile).")
    Path credentialsFile;

    @Option(names = "--no-sign-request", description = "Send unsigned requests (public buckets).")
    boolean noSignRequest;

    @Option(names = "--ca-bundle", paramLabel = "FILE", description = "PEM file of the CAs that sign an https endpoint's certificate, trusted instead of the JDK's (default: $AWS_CA_BUNDLE if set).")
    Path caBundle;

    @Option(names = "--insecure-skip-verify", description = "Do not check the https endpoint's certificate. For test setups only: anyone on the path can then read and alter the data.")
    boolean insecureSkipVerify;

    @Option(names = "--virtual-host-style", description = "Address the bucket as a host name (default: path style).")
    boolean virtualHostStyle;

    @Option(names = "--max-fetches", paramLabel = "N", defaultValue = "32", description = "Chunk fetches in flight at once (default: ${DEFAULT-VALUE}).")
    int maxFetches;

    @Option(names = "--request-timeout", paramLabel = "SECONDS", defaultValue = "10", description = "Deadline of one S3 request, body included (default: ${DEFAULT-VALUE}).")
    int requestTimeout;

    @Option(names = "--retries", paramLabel = "N", defaultValue = "6",
            description = "Retries of an S3 request that failed transiently (refused, reset, timed out, 5xx, SlowDown), backing off 100 ms doubling to 5 s: the default rides out about 3 s of outage (default: ${DEFAULT-VALUE}).")
    int retries;

    /** The settings these options give (checked where they are used). */
    StoreSettings settings() {
        return new StoreSettings(endpoint, region, profile, credentialsFile, noSignRequest, caBundle, insecureSkipVerify,
                virtualHostStyle, maxFetches, requestTimeout, retries);
    }
}
