package io.os2g.diskcache;

import java.nio.file.Path;

/**
 * A disk cache as a user asked for it.
 *
 * @param directory where its blocks live (created if need be)
 * @param maxBytes the most its blocks take; {@link Long#MAX_VALUE}: bounded by {@code minFreePercent} only
 * @param minFreePercent the share of its file system kept free (5 by default, as mountpoint-s3 keeps)
 */
public record CacheConfig(Path directory, long maxBytes, int minFreePercent) {

    public static final int DEFAULT_MIN_FREE_PERCENT = 5;

    public CacheConfig {
        if (minFreePercent < 0 || minFreePercent > 90) {
            throw new IllegalArgumentException("minFreePercent must be 0-90: " + minFreePercent);
        }
        if (maxBytes <= 0) {
            throw new IllegalArgumentException("maxBytes must be positive: " + maxBytes);
        }
    }
}
