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
 * keys left out) and signed with {@code secrets} (the nodePublishSecretRef; empty: unsigned).
 */
record VolumeRequest(String volumeId, Path target, boolean readOnly, Map<String, String> attributes, Map<String, String> secrets) {

    /** Keys the kubelet adds to a volume's context (pod name, namespace, ephemeral, service-account tokens). */
    static final String KUBELET_PREFIX = "csi.storage.k8s.io/";

    /** The secret's keys: AWS-style names, as in a credentials file. */
    static final String ACCESS_KEY_ID = "access_key_id";
    static final String SECRET_ACCESS_KEY = "secret_access_key";
    static final String SESSION_TOKEN = "session_token";

    VolumeRequest {
        attributes = new TreeMap<>(attributes);
        attributes.keySet().removeIf(k -> k.startsWith(KUBELET_PREFIX));
        attributes = Map.copyOf(attributes);
        secrets = Map.copyOf(secrets);
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
     * The shared mount this volume is served by: one per (volume, attributes, credentials), so pods of one
     * volume with one secret share a mount and a changed secret gets its own.
     */
    String mountKey() {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            update(digest, volumeId);
            for (Map.Entry<String, String> e : new TreeMap<>(attributes).entrySet()) {
                update(digest, "a:" + e.getKey());
                update(digest, e.getValue());
            }
            for (Map.Entry<String, String> e : new TreeMap<>(secrets).entrySet()) {
                update(digest, "s:" + e.getKey());
                update(digest, e.getValue());
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
                + ", secret keys " + new TreeMap<>(secrets).keySet();
    }
}
