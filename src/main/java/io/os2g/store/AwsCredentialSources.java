package io.os2g.store;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;
import software.amazon.awssdk.auth.credentials.AwsCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.AwsSessionCredentials;
import software.amazon.awssdk.auth.credentials.ContainerCredentialsProvider;
import software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider;
import software.amazon.awssdk.auth.credentials.InstanceProfileCredentialsProvider;
import software.amazon.awssdk.auth.credentials.ProfileCredentialsProvider;
import software.amazon.awssdk.auth.credentials.WebIdentityTokenFileCredentialsProvider;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.profiles.ProfileFile;
import software.amazon.awssdk.utils.SdkAutoCloseable;

/**
 * The credential sources of an S3 client, in the order the AWS CLI documents, each one of the AWS SDK's
 * providers: the environment ({@code AWS_ACCESS_KEY_ID} ...), web identity ({@code
 * AWS_WEB_IDENTITY_TOKEN_FILE} + {@code AWS_ROLE_ARN}, exchanged with STS), the profile ({@code
 * AWS_PROFILE} or {@code default} in {@code ~/.aws/credentials} and {@code ~/.aws/config}: keys,
 * {@code credential_process}, SSO, {@code role_arn}), container credentials ({@code
 * AWS_CONTAINER_CREDENTIALS_*}), and the instance metadata service (IMDSv2). Each fetch builds the
 * provider afresh, so a renewal reaches the endpoint, file or command instead of the provider's cache.
 */
public final class AwsCredentialSources {

    private AwsCredentialSources() {
    }

    /**
     * The sources for the given options: {@code noSignRequest} none; {@code credentialsFile} that file's
     * profile ({@code profile}, else default); {@code profile} that profile of the shared files; else the
     * whole chain.
     */
    public static CredentialsSource of(Map<String, String> env, boolean noSignRequest, String profile, Path credentialsFile) {
        if (noSignRequest) {
            return Credentials.anonymous();
        }
        if (credentialsFile != null) {
            String name = profile != null ? profile : "default";
            return sdk("profile " + name + " of " + credentialsFile, true, () -> ProfileCredentialsProvider.builder()
                    .profileFile(ProfileFile.builder().content(credentialsFile).type(ProfileFile.Type.CREDENTIALS).build())
                    .profileName(name).build());
        }
        if (profile != null) {
            return sdk("profile " + profile, true, () -> ProfileCredentialsProvider.builder().profileName(profile).build());
        }
        List<CredentialsSource> chain = new ArrayList<>();
        chain.add(sdk("environment", set(env, "AWS_ACCESS_KEY_ID"), EnvironmentVariableCredentialsProvider::create));
        chain.add(sdk("web identity", set(env, "AWS_WEB_IDENTITY_TOKEN_FILE"),
                () -> WebIdentityTokenFileCredentialsProvider.builder().asyncCredentialUpdateEnabled(false).build()));
        String name = set(env, "AWS_PROFILE") ? env.get("AWS_PROFILE") : "default";
        chain.add(sdk("profile " + name, set(env, "AWS_PROFILE"), () -> ProfileCredentialsProvider.builder().profileName(name).build()));
        chain.add(sdk("container credentials", set(env, "AWS_CONTAINER_CREDENTIALS_FULL_URI")
                || set(env, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"), () -> ContainerCredentialsProvider.builder().build()));
        if ("true".equalsIgnoreCase(env.getOrDefault("AWS_EC2_METADATA_DISABLED", ""))) {
            chain.add(absent("instance metadata (AWS_EC2_METADATA_DISABLED)"));
        } else if (set(env, "AWS_EC2_METADATA_SERVICE_ENDPOINT") || onEc2()) {
            chain.add(sdk("instance metadata", true, () -> InstanceProfileCredentialsProvider.builder().build()));
        } else {
            chain.add(absent("instance metadata (not an EC2 instance; AWS_EC2_METADATA_SERVICE_ENDPOINT names one elsewhere)"));
        }
        return new CredentialsChain(chain);
    }

    /**
     * Whether this machine says it is an EC2 instance (its DMI board asset tag is the instance id, or its
     * vendor Amazon), so that the metadata service is asked. Elsewhere it is asked only where
     * {@code AWS_EC2_METADATA_SERVICE_ENDPOINT} names one: on-premises nodes never wait on 169.254.169.254.
     */
    static boolean onEc2() {
        return read("/sys/devices/virtual/dmi/id/board_asset_tag").startsWith("i-")
                || read("/sys/devices/virtual/dmi/id/sys_vendor").toLowerCase(Locale.ROOT).contains("amazon");
    }

    private static String read(String file) {
        try {
            return Files.readString(Path.of(file)).strip();
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }

    private static boolean set(Map<String, String> env, String name) {
        String value = env.get(name);
        return value != null && !value.isBlank();
    }

    /** A source that is not set up here, named in the error when no source has credentials. */
    private static CredentialsSource absent(String name) {
        return new CredentialsSource() {
            @Override
            public Credentials fetch() {
                throw new Unavailable(name + ": not set up here", false, null);
            }

            @Override
            public String name() {
                return name;
            }
        };
    }

    /** One of the SDK's providers as a source; {@code configured}: whether its settings are present here. */
    private static CredentialsSource sdk(String name, boolean configured, Supplier<AwsCredentialsProvider> provider) {
        return new CredentialsSource() {
            @Override
            public Credentials fetch() {
                AwsCredentialsProvider p = null;
                try {
                    p = provider.get();
                    return credentials(p.resolveCredentials());
                } catch (SdkException | IllegalStateException | IllegalArgumentException e) {
                    throw new Unavailable(name + ": " + firstLine(e.getMessage()), configured, e);
                } finally {
                    if (p instanceof SdkAutoCloseable closeable) {
                        closeable.close();
                    }
                }
            }

            @Override
            public String name() {
                return name;
            }
        };
    }

    private static Credentials credentials(AwsCredentials c) {
        String token = c instanceof AwsSessionCredentials session ? session.sessionToken() : null;
        return new Credentials(c.accessKeyId(), c.secretAccessKey(), token, c.expirationTime().orElse(null));
    }

    /** The SDK's messages can list every provider it tried, one per line: the first line says what failed. */
    private static String firstLine(String message) {
        if (message == null) {
            return "no details";
        }
        int nl = message.indexOf('\n');
        return nl < 0 ? message : message.substring(0, nl);
    }
}
