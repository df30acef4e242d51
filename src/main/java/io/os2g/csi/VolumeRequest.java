package io.os2g.csi;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;

/**
 * What one NodePublishVolume asks for: volume {@code volumeId} at {@code target}, read-only or not,
 * mounted with {@code attributes} (the volume's context, the kubelet's own {@code csi.storage.k8s.io/}
 * keys left out) and the capability's {@code flags} (its mount_flags), signed with {@code secrets} (the
 * nodePublishSecretRef; empty: unsigned), or with the pod's service-account token exchanged for a role
 * ({@code role_arn}): {@code serviceAccount} ({@code namespace/name}) and {@code tokens} (audience to
 * token) as the kubelet passes them.
 */
record VolumeRequest(String volumeId, Path target, boolean readOnly, Map<String, String> attributes, MountFlags flags,
                     Map<String, String> secrets, String serviceAccount, Map<String, String> tokens) {

    /** Keys the kubelet adds to a volume's context (pod name, namespace, ephemeral, service-account tokens). */
    static final String KUBELET_PREFIX = "csi.storage.k8s.io/";
    private static final String TOKENS = KUBELET_PREFIX + "serviceAccount.tokens";
    private static final String ACCOUNT = KUBELET_PREFIX + "serviceAccount.name";
    private static final String NAMESPACE = KUBELET_PREFIX + "pod.namespace";

    /** Attributes of the plugin's own, not mount options: web identity per pod. */
    static final String ROLE_ARN = "role_arn";
    static final String STS_ENDPOINT = "sts_endpoint";
    static final String TOKEN_AUDIENCE = "token_audience";
    private static final java.util.Set<String> PLUGIN_ATTRIBUTES = java.util.Set.of(ROLE_ARN, STS_ENDPOINT, TOKEN_AUDIENCE);

    /** The secret's keys: AWS-style names, as in a credentials file. */
    static final String ACCESS_KEY_ID = "access_key_id";
    static final String SECRET_ACCESS_KEY = "secret_access_key";
    static final String SESSION_TOKEN = "session_token";

    VolumeRequest {
        attributes = new TreeMap<>(attributes);
        attributes.keySet().removeIf(k -> k.startsWith(KUBELET_PREFIX));
        attributes = Map.copyOf(attributes);
        secrets = Map.copyOf(secrets);
        tokens = Map.copyOf(tokens);
    }

    /** A request from the volume's context as the kubelet sends it (its own keys read here, then left out). */
    static VolumeRequest of(String volumeId, Path target, boolean readOnly, Map<String, String> context, MountFlags flags,
                            Map<String, String> secrets) throws CsiException {
        Map<String, String> tokens = new TreeMap<>();
        String json = context.get(TOKENS);
        if (json != null && !json.isBlank()) {
            try {
                com.fasterxml.jackson.databind.JsonNode parsed = Mounter.JSON.readTree(json);
                parsed.fields().forEachRemaining(e -> tokens.put(e.getKey(), e.getValue().path("token").asText()));
            } catch (java.io.IOException e) {
                throw CsiException.invalid(TOKENS + " is not the kubelet's JSON of tokens");
            }
        }
        String account = context.containsKey(ACCOUNT) ? context.getOrDefault(NAMESPACE, "") + "/" + context.get(ACCOUNT) : "";
        return new VolumeRequest(volumeId, target, readOnly || flags.readOnly(), context, flags, secrets, account, tokens);
    }

    /** Whether the volume is signed with the pod's own identity: its service-account token for {@code role_arn}. */
    boolean webIdentity() {
        return attributes.containsKey(ROLE_ARN);
    }

    /** The attributes that are mount options: the plugin's own left out. */
    Map<String, String> mountAttributes() {
        Map<String, String> options = new TreeMap<>(attributes);
        options.keySet().removeAll(PLUGIN_ATTRIBUTES);
        return options;
    }

    /** Whether the volume takes writes: {@code allow_writes} as an attribute or a mount option. */
    boolean allowsWrites() {
        return "true".equals(flags.options().getOrDefault("allow_writes", attributes.get("allow_writes")));
    }

    /** The flags of the pod's bind: its mount_flags', and read-only where the pod or the volume takes no writes. */
    long bindFlags() {
        return flags.bindFlags() | (readOnly || !allowsWrites() ? Libc.MS_RDONLY : 0);
    }

    /** The pod's token for STS: the one of {@code token_audience}, or the only one the kubelet passed. */
    String token() throws CsiException {
        String audience = attributes.get(TOKEN_AUDIENCE);
        String token = audience != null ? tokens.get(audience) : tokens.size() == 1 ? tokens.values().iterator().next() : null;
        if (token == null || token.isBlank()) {
            throw new CsiException(io.grpc.Status.Code.FAILED_PRECONDITION, ROLE_ARN + " needs the pod's service-account token"
                    + (audience != null ? " for audience " + audience : "") + ", which the kubelet passes when the CSIDriver has "
                    + "tokenRequests (the chart's webIdentity.audience); it passed " + (tokens.isEmpty() ? "none" : tokens.keySet()));
        }
        return token;
    }

    /** Checks the secret's keys (never its values' content): the keys a credentials file needs, nothing else. */
    void checkSecrets() throws CsiException {
        if (secrets.isEmpty()) {
            return;
        }
        for (String key : secrets.keySet()) {
            if (!key.equals(ACCESS_KEY_ID) && !key.equals(SECRET_ACCESS_KEY) && !key.equals(SESSION_TOKEN)) {
                throw CsiException.invalid("secret key " + key + " is not one os2g reads (" + ACCESS_KEY_ID + ", "
                        + SECRET_ACCESS_KEY + ", " + SESSION_TOKEN + ")");
            }
        }
        for (String key : new String[] {ACCESS_KEY_ID, SECRET_ACCESS_KEY}) {
            String value = secrets.get(key);
            if (value == null || value.isBlank()) {
                throw CsiException.invalid("secret has no " + key);
            }
            if (value.contains("\n") || value.contains("\r")) {
                throw CsiException.invalid("secret " + key + " is more than one line");
            }
        }
    }

    /**
     * The shared mount this volume is served by: one per (volume, attributes, mount options, credentials),
     * so pods of one volume with one secret share a mount and a changed secret gets its own.
     */
    String mountKey() {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            update(digest, volumeId);
            for (Map.Entry<String, String> e : new TreeMap<>(attributes).entrySet()) {
                update(digest, "a:" + e.getKey());
                update(digest, e.getValue());
            }
            for (Map.Entry<String, String> e : new TreeMap<>(flags.options()).entrySet()) {
                update(digest, "o:" + e.getKey());
                update(digest, e.getValue());
            }
            for (Map.Entry<String, String> e : new TreeMap<>(secrets).entrySet()) {
                update(digest, "s:" + e.getKey());
                update(digest, e.getValue());
            }
            if (webIdentity()) { // one mount per service account: each pod's identity, not the first one's
                update(digest, "sa:" + serviceAccount);
            }
            return HexFormat.of().formatHex(digest.digest(), 0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void update(MessageDigest digest, String value) {
        byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
        digest.update(java.nio.ByteBuffer.allocate(4).putInt(bytes.length).array()); // lengths: no two lists hash alike
        digest.update(bytes);
    }

    /** The secrets as an AWS credentials file's default profile. */
    String credentialsFile() {
        StringBuilder s = new StringBuilder("[default]\n");
        s.append("aws_access_key_id = ").append(secrets.get(ACCESS_KEY_ID)).append('\n');
        s.append("aws_secret_access_key = ").append(secrets.get(SECRET_ACCESS_KEY)).append('\n');
        if (secrets.containsKey(SESSION_TOKEN)) {
            s.append("aws_session_token = ").append(secrets.get(SESSION_TOKEN)).append('\n');
        }
        return s.toString();
    }

    /** Never the secrets' values. */
    @Override
    public String toString() {
        return "volume " + volumeId + " at " + target + (readOnly ? " (read-only)" : "") + ", attributes " + attributes
                + (flags.options().isEmpty() ? "" : ", mount options " + flags.options())
                + ", secret keys " + new TreeMap<>(secrets).keySet() + (webIdentity() ? ", web identity of " + serviceAccount : "");
    }
}
