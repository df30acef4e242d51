package io.os2g.runtime;

import io.os2g.diskcache.DiskCache;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Instant;

/** {@code os2g cache stats|clear DIR}: a disk cache directory looked into or emptied, whether or not a mount uses it. */
public final class CacheDirectories {

    private CacheDirectories() {
    }

    /** What the cache holds, as one JSON line: blocks, bytes, last use, its file system's room. */
    public static String statsJson(Path directory) {
        DiskCache.Summary s = onCache(directory, () -> DiskCache.summarize(directory));
        return String.format("{\"blocks\": %d, \"bytes\": %d, \"size\": \"%s\", \"oldest_use\": %s, \"newest_use\": %s, "
                        + "\"file_system_free_bytes\": %d, \"file_system_bytes\": %d}",
                s.blocks(), s.bytes(), Sizes.format(s.bytes()), instant(s.oldestUseMillis()), instant(s.newestUseMillis()),
                s.usableBytes(), s.totalBytes());
    }

    /** Deletes every block (mounts using the cache fetch them again); returns how many. */
    public static long clear(Path directory) {
        return onCache(directory, () -> DiskCache.clear(directory));
    }

    /** What a cache directory's operation returns; its failures are the user's one line. */
    private interface CacheOperation<T> {
        T run() throws IOException;
    }

    private static <T> T onCache(Path directory, CacheOperation<T> operation) {
        try {
            return operation.run();
        } catch (DiskCache.CacheDirectoryException e) {
            throw new UsageError(e.getMessage());
        } catch (IOException e) {
            throw new UsageError("cannot read " + directory + ": " + e.getMessage());
        }
    }

    private static String instant(long millis) {
        return millis == 0 ? "null" : "\"" + Instant.ofEpochMilli(millis) + "\"";
    }
}
