package io.os2g.staging;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * Shape of the staging region.
 *
 * @param directory where segment files live; created 0700, removed at close
 * @param capacity total bytes of all segments: the bound on staged and in-flight data
 * @param pageSize allocation unit. 64 KiB: small enough that a JPEG-sized file wastes little, large
 *     enough that an 8 MiB chunk is 128 pages and allocating them stays cheap
 * @param segmentSize bytes per segment file; 64 MiB keeps the file count low and each mmap modest
 * @param reserveTimeout how long a fetch waits for space when every page is pinned or in flight
 */
public record StagingConfig(Path directory, long capacity, int pageSize, long segmentSize, Duration reserveTimeout) {

    public static final int DEFAULT_PAGE_SIZE = 64 * 1024;
    public static final long DEFAULT_SEGMENT_SIZE = 64L * 1024 * 1024;

    public StagingConfig {
        Objects.requireNonNull(directory, "directory");
        if (pageSize <= 0 || Long.bitCount(pageSize) != 1) {
            throw new IllegalArgumentException("page size must be a power of two: pageSize=" + pageSize);
        }
        if (capacity < pageSize) {
            throw new IllegalArgumentException("staging capacity below one page: capacity=" + capacity + ", pageSize=" + pageSize);
        }
        if (segmentSize < pageSize || segmentSize % pageSize != 0) {
            throw new IllegalArgumentException("segment size must be a multiple of the page size: segmentSize="
                    + segmentSize + ", pageSize=" + pageSize);
        }
    }

    public static StagingConfig of(Path directory, long capacity, Duration reserveTimeout) {
        long segment = Math.min(DEFAULT_SEGMENT_SIZE, roundUp(capacity, DEFAULT_PAGE_SIZE));
        return new StagingConfig(directory, capacity, DEFAULT_PAGE_SIZE, segment, reserveTimeout);
    }

    /** Segments needed to hold the capacity (the last one may be partly used). */
    public int segmentCount() {
        return (int) ((capacity + segmentSize - 1) / segmentSize);
    }

    public int pageCount() {
        return (int) (capacity / pageSize);
    }

    public int pagesPerSegment() {
        return (int) (segmentSize / pageSize);
    }

    static long roundUp(long value, long unit) {
        return (value + unit - 1) / unit * unit;
    }
}
