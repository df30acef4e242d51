package io.os2g.agent;

/**
 * @param chunkSize unit of fetching and staging (default 8 MiB: large enough that one GET amortises
 *     the request latency of an object store, small enough that a random 4 KiB read of a large
 *     file does not drag in much more)
 * @param initialReadahead first readahead window of a handle: 1 MiB, as mountpoint-s3 starts, so a
 *     reader that turns out random wastes little
 * @param maxReadahead cap on one handle's window, which is sized below it from the reader's rate and
 *     the store's chunk fetch time (default 256 MiB: a reader at 2 GB/s of a store that takes 60 ms
 *     per chunk; the agent also keeps it within a quarter of the staging region)
 * @param maxInFlight chunk fetches running at once over all handles
 * @param directoryPrefetch small files of a directory being read through that are staged ahead of
 *     their open, at most (default 256: about 32 MB of JPEG-sized files per directory, enough that a
 *     shuffled epoch over an ImageFolder tree finds most files staged; 0 turns it off)
 */
public record AgentConfig(long chunkSize, long initialReadahead, long maxReadahead, int maxInFlight, int directoryPrefetch) {

    public static final long DEFAULT_CHUNK_SIZE = 8L << 20;
    public static final long DEFAULT_INITIAL_READAHEAD = 1L << 20;
    public static final long DEFAULT_MAX_READAHEAD = 256L << 20;
    public static final int DEFAULT_MAX_IN_FLIGHT = 32;
    public static final int DEFAULT_DIRECTORY_PREFETCH = 256;

    public AgentConfig {
        if (initialReadahead <= 0 || maxReadahead < initialReadahead) {
            throw new IllegalArgumentException("readahead must satisfy 0 < initial <= max: initial="
                    + initialReadahead + ", max=" + maxReadahead);
        }
        if (directoryPrefetch < 0) {
            throw new IllegalArgumentException("directoryPrefetch must be >= 0: directoryPrefetch=" + directoryPrefetch);
        }
        if (maxInFlight < 1) {
            throw new IllegalArgumentException("maxInFlight must be >= 1: maxInFlight=" + maxInFlight);
        }
    }

    public static AgentConfig defaults() {
        return new AgentConfig(DEFAULT_CHUNK_SIZE, DEFAULT_INITIAL_READAHEAD, DEFAULT_MAX_READAHEAD, DEFAULT_MAX_IN_FLIGHT,
                DEFAULT_DIRECTORY_PREFETCH);
    }
}
