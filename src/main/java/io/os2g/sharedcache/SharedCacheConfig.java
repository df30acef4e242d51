package io.os2g.sharedcache;

import io.os2g.store.StoreConfig;
import java.util.Objects;

/**
 * Where the shared tier's blocks go.
 *
 * @param store the cache bucket's store (endpoint, credentials, TLS, and short retries: a slow tier is
 *     bypassed, not waited for)
 * @param prefix the blocks' place in the cache bucket: {@code ""} or ending in {@code /}
 * @param key the file of the secret the cluster's nodes sign blocks with; null for CRC32C only
 */
public record SharedCacheConfig(StoreConfig store, String prefix, java.nio.file.Path key) {
    public SharedCacheConfig {
        Objects.requireNonNull(store, "store");
        Objects.requireNonNull(prefix, "prefix");
    }

    /** {@code s3://BUCKET/PREFIX}, for logs. */
    public String url() {
        return "s3://" + store.bucket() + "/" + prefix;
    }
}
