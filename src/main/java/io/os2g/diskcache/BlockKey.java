package io.os2g.diskcache;

import io.os2g.PerThread;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * What makes a cached block safe to serve: the store and bucket it came from ({@code scope}), the
 * object's key and version (ETag), and the byte range. A changed object has a new ETag, so its old
 * bytes are never found for it; mounts with other chunk sizes ask for other ranges.
 */
public record BlockKey(String scope, String key, String etag, long offset, long length) {

    public BlockKey {
        if (offset < 0 || length < 0) {
            throw new IllegalArgumentException("a block's range must not be negative: " + offset + "+" + length);
        }
    }

    /** The key as one line, stored in the block file and compared on read (a hash collision is a miss). */
    public String canonical() {
        return scope + '\n' + key + '\n' + etag + '\n' + offset + '\n' + length;
    }

    /** The block file's name: SHA-256 of {@link #canonical}, in hex. */
    public String fileName() {
        try (PerThread.Lease<MessageDigest> sha256 = SHA256.take()) {
            return HexFormat.of().formatHex(sha256.value().digest(canonical().getBytes(StandardCharsets.UTF_8)));
        }
    }

    /** Digests kept for reuse (looking one up by name costs more than hashing a key); digest() leaves one reset. */
    private static final PerThread<MessageDigest> SHA256 = PerThread.withInitial(() -> {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    });
}
