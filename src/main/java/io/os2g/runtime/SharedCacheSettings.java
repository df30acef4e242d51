package io.os2g.runtime;

import io.os2g.diskcache.BlockSigner;
import io.os2g.sharedcache.SharedCache;
import io.os2g.sharedcache.SharedCacheConfig;
import io.os2g.store.MinioObjectStore;
import io.os2g.store.StoreException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shared tier as the user gave it ({@code --shared-cache s3://BUCKET[/PREFIX]},
 * {@code --shared-cache-endpoint}, {@code --shared-cache-profile}, {@code --shared-cache-key}) on whichever process holds the store
 * client, and how it is opened. Region, CA bundle and credential sources are the origin's unless named.
 */
public final class SharedCacheSettings {

    private static final Logger LOG = LoggerFactory.getLogger(SharedCacheSettings.class);
    /**
     * A request to the tier gives up after this long (an 8 MiB block at 4 MB/s), and is not asked again:
     * the origin is there instead, and the tier is bypassed for a while.
     */
    static final int REQUEST_TIMEOUT_SECONDS = 2;

    private SharedCacheSettings() {
    }

    /**
     * The tier's configuration; null without {@code url}.
     *
     * @param origin the origin's store options (null only in tests that build a store by hand: then no tier)
     * @throws UsageError for a malformed URL, or the tier's options without one
     */
    static SharedCacheConfig config(String url, String endpoint, String profile, Path key, StoreSettings origin) {
        if (url == null) {
            if (endpoint != null || profile != null || key != null) {
                throw new UsageError("--shared-cache-endpoint, --shared-cache-profile and --shared-cache-key need --shared-cache s3://BUCKET[/PREFIX]");
            }
            return null;
        }
        if (!url.startsWith("s3://") || url.length() == "s3://".length() || url.charAt("s3://".length()) == '/') {
            throw new UsageError("--shared-cache must be s3://BUCKET[/PREFIX]: " + url);
        }
        if (origin == null) {
            throw new UsageError("--shared-cache needs the store options of the process that reaches the store");
        }
        String rest = url.substring("s3://".length());
        int slash = rest.indexOf('/');
        String bucket = slash < 0 ? rest : rest.substring(0, slash);
        String prefix = slash < 0 ? "" : rest.substring(slash + 1);
        if (!prefix.isEmpty() && !prefix.endsWith("/")) {
            prefix = prefix + "/";
        }
        StoreSettings tier = new StoreSettings(endpoint != null ? endpoint : origin.endpoint(), endpoint != null ? null : origin.region(),
                profile != null ? profile : origin.profile(), profile != null ? null : origin.credentialsFile(), false,
                origin.caBundle(), origin.insecureSkipVerify(), origin.virtualHostStyle(), origin.maxFetches(),
                Math.min(origin.requestTimeout(), REQUEST_TIMEOUT_SECONDS), 0);
        if (key != null) {
            secret(key); // its errors now, before anything starts
        }
        return new SharedCacheConfig(tier.config(bucket), prefix, key == null ? null : key.toAbsolutePath());
    }

    /**
     * The cluster's secret in {@code key}: a regular file of at least 32 bytes (a Kubernetes Secret's
     * key, or {@code head -c 32 /dev/urandom}) that other users cannot read.
     */
    static byte[] secret(Path key) {
        try {
            Map<String, Object> seen = Files.readAttributes(key, "unix:mode,isRegularFile");
            if (!(Boolean) seen.get("isRegularFile")) {
                throw new UsageError("--shared-cache-key is not a regular file: " + key);
            }
            if (((Integer) seen.get("mode") & 0004) != 0) {
                throw new UsageError("--shared-cache-key " + key + " can be read by every user: make it 0600 (or 0400)");
            }
            byte[] secret = Files.readAllBytes(key);
            if (secret.length < BlockSigner.LENGTH) {
                throw new UsageError("--shared-cache-key " + key + " holds " + secret.length + " bytes, fewer than "
                        + BlockSigner.LENGTH + " (head -c 32 /dev/urandom makes one)");
            }
            return secret;
        } catch (IOException e) {
            throw new UsageError("--shared-cache-key cannot be read: " + key + " (" + e.getMessage() + ")");
        }
    }

    /** {@code os2g cache stats s3://BUCKET[/PREFIX]}: what the tier holds there, as one JSON line. */
    public static String statsJson(StoreSettings store, String url) {
        SharedCacheConfig config = config(url, null, null, null, store);
        try (MinioObjectStore s = Preflight.openStore(config.store())) {
            SharedCache.Summary summary = onTier(config, () -> SharedCache.summarize(s, config.prefix()));
            return String.format("{\"url\": \"%s\", \"blocks\": %d, \"bytes\": %d, \"size\": \"%s\", \"oldest_write\": %s, \"newest_write\": %s}",
                    config.url(), summary.blocks(), summary.bytes(), Sizes.format(summary.bytes()), instant(summary.oldestMillis()),
                    instant(summary.newestMillis()));
        }
    }

    /** {@code os2g cache clear s3://BUCKET[/PREFIX]}: deletes the tier's blocks there; returns how many. */
    public static long clear(StoreSettings store, String url) {
        SharedCacheConfig config = config(url, null, null, null, store);
        try (MinioObjectStore s = Preflight.openStore(config.store())) {
            return onTier(config, () -> SharedCache.clear(s, config.prefix()));
        }
    }

    private static <T> T onTier(SharedCacheConfig config, java.util.function.Supplier<T> operation) {
        try {
            return operation.get();
        } catch (StoreException e) {
            throw new UsageError(config.url() + " at " + config.store().endpoint() + ": " + e.getMessage());
        }
    }

    private static String instant(long millis) {
        return millis == 0 ? "null" : "\"" + java.time.Instant.ofEpochMilli(millis) + "\"";
    }

    /**
     * Opens the tier; null without one. What the user must fix (no such bucket, credentials refused, an
     * untrusted certificate) is refused now; a tier that does not answer yet is only bypassed until it does.
     */
    static SharedCache open(SharedCacheConfig config) {
        if (config == null) {
            return null;
        }
        MinioObjectStore store = Preflight.openStore(config.store());
        try {
            store.probe(config.prefix());
        } catch (StoreException e) {
            switch (e.kind()) {
                case UNREACHABLE, UNAVAILABLE -> LOG.warn("the shared cache {} at {} does not answer yet ({}): reads go to the origin until it does",
                        config.url(), config.store().endpoint(), e.getMessage());
                default -> {
                    store.close();
                    throw new UsageError("--shared-cache " + config.url() + " at " + config.store().endpoint() + ": " + e.getMessage());
                }
            }
        } catch (RuntimeException e) {
            store.close();
            throw e;
        }
        return new SharedCache(store, config.prefix(), config.key() == null ? null : BlockSigner.of(secret(config.key())));
    }
}
