package io.os2g.runtime;

import io.os2g.diskcache.CacheConfig;
import java.nio.file.Path;

/** The disk cache's options ({@code --cache-dir}, {@code --cache-size}, {@code --cache-min-free}) and their rules. */
final class CacheSettings {

    private CacheSettings() {
    }

    /**
     * @param directory null for no disk cache
     * @param size a size, or null for the file system's room
     * @return the cache asked for, or null for none
     * @throws UsageError for a rule broken
     */
    static CacheConfig config(Path directory, String size, int minFreePercent) {
        if (directory == null) {
            if (size != null) {
                throw new UsageError("--cache-size needs --cache-dir");
            }
            return null;
        }
        if (minFreePercent < 0 || minFreePercent > 90) {
            throw new UsageError("--cache-min-free must be a percentage from 0 to 90: " + minFreePercent);
        }
        long max = size == null ? Long.MAX_VALUE : Sizes.parse("--cache-size", size);
        if (max < (64L << 20)) {
            throw new UsageError("--cache-size must be at least 64M: " + size);
        }
        return new CacheConfig(directory.toAbsolutePath().normalize(), max, minFreePercent);
    }
}
